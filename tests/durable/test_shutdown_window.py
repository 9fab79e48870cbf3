"""The whole shutdown fits the graceful window with many runs streaming (docs/serving.md#shutdown):
`agui serve --timeout-graceful-shutdown 3` (with a SQLite store and without one) and plain
`uvicorn app:api --timeout-graceful-shutdown 3` (an AgentApp with a SQLite store), each a real
subprocess with RUNS runs streaming to SSE readers over loopback, then SIGTERM.

What the window means, asserted structurally (no wall-clock figure: a busy machine slows every
step, and the margin the server keeps scales with the runs going): every client gets RUN_ERROR
SERVER_SHUTDOWN as its last event; uvicorn never had to cancel a request (it logs "Cancel N running
task(s), timeout graceful shutdown exceeded" when its window ends with work left, and AgentApp then
logs each response it ends: their absence is the proof that everything was done within the window);
every run's end is in the store; the process exits. The runs go on for half the window at least
(the margin is at most half of it): a lower bound, which slowness cannot break.

One run in ten has an agent that takes far longer than the window to stop once cancelled (a tool
in a thread, a connection that closes slowly): its run ends all the same, shortly after the grace
(the server waited up to 2 s for such an agent before the run's end went out, past the window),
and nothing waits for the agent beyond the window.
"""

from __future__ import annotations

import asyncio
import json
import re
import selectors
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import h11
import pytest

from agui import SSEDecoder
from agui.store import open_log
from tests.usage.support import Server

WINDOW = 3.0
"""--timeout-graceful-shutdown in these tests."""
RUNS = 200
"""Runs streaming when SIGTERM comes: enough for ending them to cost something."""
HANG = 60.0
"""A hang bound: how long the test waits for the streams and for the process to end (about
WINDOW in practice)."""

APP = """
import asyncio

import agui


async def linger(seconds):
    # take `seconds`, whatever cancels the task meanwhile
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while (left := end - loop.time()) > 0:
        try:
            await asyncio.sleep(left)
        except asyncio.CancelledError:
            pass


async def streaming(run: agui.RunAgentInput):
    yield agui.TextMessageStartEvent(message_id="m")
    try:
        while True:
            yield agui.TextMessageContentEvent(message_id="m", delta="working ")
            await asyncio.sleep(0.25)
    finally:
        if run.run_id.endswith("0"):  # one run in ten: its agent takes long to stop
            await linger(30)


api = agui.AgentApp(streaming, path="/agent", store={store!r})
"""


class Streams:
    """`count` runs POSTed to 127.0.0.1:`port`/agent, each on a connection of its own, read in this
    thread (a selector over the sockets, h11 parsing the responses), each response's SSE events
    kept as they come."""

    def __init__(self, port: int, count: int) -> None:
        self.selector = selectors.DefaultSelector()
        self.events: dict[str, list[dict[str, Any]]] = {}
        self.ended: dict[str, float] = {}  # run id: when its RUN_ERROR came
        for n in range(count):
            run_id = f"r{n}"
            body = json.dumps(
                {
                    "threadId": f"t{n}",
                    "runId": run_id,
                    "messages": [],
                    "tools": [],
                    "context": [],
                }
            ).encode()
            client = h11.Connection(h11.CLIENT)
            headers = [
                ("host", f"127.0.0.1:{port}"),
                ("content-type", "application/json"),
                ("accept", "text/event-stream"),
                ("content-length", str(len(body))),
            ]
            sock = socket.create_connection(("127.0.0.1", port), timeout=HANG)
            sock.sendall(
                client.send(h11.Request(method="POST", target="/agent", headers=headers))
                + client.send(h11.Data(data=body))
                + client.send(h11.EndOfMessage())
            )
            sock.setblocking(False)
            self.events[run_id] = []
            self.selector.register(sock, selectors.EVENT_READ, (run_id, client, SSEDecoder()))

    def open(self) -> int:
        return len(self.selector.get_map())

    def read(self, timeout: float) -> None:
        """Read what came within `timeout` seconds; close the connections whose response ended."""
        for key, _ in self.selector.select(timeout):
            run_id, client, decoder = key.data
            sock: socket.socket = key.fileobj  # type: ignore[assignment]
            try:
                data = sock.recv(65536)
            except BlockingIOError:
                continue
            except ConnectionError:
                data = b""
            client.receive_data(data)
            done = not data
            while True:
                event = client.next_event()
                if event in (h11.NEED_DATA, h11.PAUSED):
                    break
                if isinstance(event, h11.Data):
                    for message in decoder.feed(bytes(event.data)):
                        self.events[run_id].append(json.loads(message.data))
                        if self.events[run_id][-1]["type"] == "RUN_ERROR":
                            self.ended[run_id] = time.monotonic()
                elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                    done = True
                    break
            if done:
                self.selector.unregister(sock)
                sock.close()

    def until(self, predicate: Any, timeout: float = HANG) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < deadline, "timed out waiting for the streams"  # hang bound
            self.read(0.05)


def stored_ends(url: str) -> dict[str, tuple[str, str | None]]:
    """The type and code of every run's last stored event."""

    async def read() -> dict[str, tuple[str, str | None]]:
        log = open_log(url)
        try:
            ends = {}
            for n in range(RUNS):
                last = json.loads([e.data async for e in log.read(f"r{n}")][-1])
                ends[f"r{n}"] = (last["type"], last.get("code"))
            return ends
        finally:
            await log.aclose()

    return asyncio.run(read())


@pytest.mark.parametrize(
    ("server", "store"),
    [("agui serve", "sqlite"), ("agui serve", "none"), ("uvicorn", "sqlite")],
)
def test_sigterm_with_many_runs_streaming_fits_the_window(
    server: str, store: str, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}" if store == "sqlite" else None
    (tmp_path / "app.py").write_text(APP.format(store=url))
    window = ["--timeout-graceful-shutdown", f"{WINDOW:g}"]
    if server == "uvicorn":
        words = ["uvicorn", "app:api", "--port", "{port}", *window]
        ready = ["Uvicorn running on http://127.0.0.1:{port} "]
    else:
        words = ["agui", "serve", "app:api", "--port", "{port}", *window]
        ready = ["serving app:api", "http://127.0.0.1:{port}"]
    process = Server(words, tmp_path, ready)
    try:
        process.wait_ready()
        streams = Streams(process.port, RUNS)
        streams.until(lambda: all(streams.events.values()))  # every run streams
        signalled = time.monotonic()
        process.proc.send_signal(signal.SIGTERM)
        streams.until(lambda: not streams.open())
        try:
            code: int | None = process.proc.wait(HANG)
        except subprocess.TimeoutExpired:
            code = None
    finally:
        if process.proc.poll() is None:
            process.proc.kill()
            process.proc.wait()
        process.reader.join(10)
    stderr = "".join(process.stderr)
    assert code is not None, "the server did not exit after SIGTERM"  # hang bound
    assert code in (0, -signal.SIGTERM), (code, stderr[-3000:])
    ends = {
        run_id: (events[-1]["type"], events[-1].get("code"))
        for run_id, events in streams.events.items()
    }
    wrong = {r: end for r, end in ends.items() if end != ("RUN_ERROR", "SERVER_SHUTDOWN")}
    assert not wrong, (len(wrong), list(wrong.items())[:3], stderr[-3000:])
    # uvicorn did not cancel anything: everything was done before its window ended
    assert not re.search(r"Cancel \d+ running task", stderr), stderr[-3000:]
    assert "the server cancelled the" not in stderr, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    # ended at the grace, at least half the window after the signal (a lower bound)
    assert min(streams.ended.values()) - signalled >= WINDOW / 2 - 0.05
    if url is not None:
        stored = stored_ends(url)
        assert set(stored.values()) == {("RUN_ERROR", "SERVER_SHUTDOWN")}, stored
