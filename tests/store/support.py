"""A real redis-server for the tests: started on a free loopback port in a temporary folder,
stopped on exit. Other test modules (the server's, over Redis) can use it too.

With no `redis-server` on PATH or no redis-py installed, `redis_unavailable()` says why; the tests
then skip, unless AGUI_REQUIRE_REDIS=1 (as .ci/run sets), which turns that into a failure.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

STARTUP_SECONDS = 10.0


def redis_unavailable() -> str | None:
    """Why the Redis tests cannot run here, or None when they can."""
    if shutil.which("redis-server") is None:
        return "redis-server is not on PATH (apt-get install redis-server)"
    if importlib.util.find_spec("redis") is None:
        return "redis-py is not installed (pip install 'agui-spec[redis]')"
    return None


def skip_or_fail_without_redis() -> None:
    """Skip the calling test when Redis is unavailable, or fail it under AGUI_REQUIRE_REDIS=1."""
    reason = redis_unavailable()
    if reason is None:
        return
    if os.environ.get("AGUI_REQUIRE_REDIS") == "1":
        pytest.fail(f"AGUI_REQUIRE_REDIS=1 but {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def ping(port: int) -> bool:
    """True when a Redis answers PING on 127.0.0.1:port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def redis_server(directory: Path) -> Iterator[str]:
    """Run redis-server (no persistence) on a free loopback port with `directory` as its working
    folder; yield its URL (`redis://127.0.0.1:PORT/0`); stop it on exit."""
    for _attempt in range(5):
        port = free_port()
        process = subprocess.Popen(
            [
                "redis-server",
                "--port", str(port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(directory),
                "--daemonize", "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + STARTUP_SECONDS
        while process.poll() is None and not ping(port):
            if time.monotonic() > deadline:
                process.kill()
                process.wait()
                raise AssertionError("redis-server did not answer PING in time")
            time.sleep(0.02)
        if process.poll() is None:
            break  # up (an exit means the port was taken meanwhile: try another)
    else:
        raise AssertionError("redis-server could not start on a free port")
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        try:
            process.wait(STARTUP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
