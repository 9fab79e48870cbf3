"""The store suite's fixtures: `backend` runs a test once per backend (memory, SQLite, Redis from a
real redis-server this session starts), and `log` is an EventLog open on it.

The tests are `async def`: the hook below runs each in a fresh event loop (asyncio.run), then
closes, in that loop, every log the test opened through its backend.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from agui.store import EventLog, Retention, open_log

from .support import redis_server, skip_or_fail_without_redis

TEST_SECONDS = 60.0
"""The most a store test may take (a hanging follower fails instead of blocking the run)."""

BACKENDS = ("memory", "sqlite", "redis")

_prefixes = itertools.count(1)


class Backend:
    """A backend for one test: `open()` opens an EventLog on the test's store; for sqlite and
    redis a second `open()` reaches the same store (a restart, another worker), for memory it
    gives a new, empty one (`shared` is False)."""

    def __init__(self, name: str, url: str) -> None:
        self.name = name
        self.url = url
        self.shared = name != "memory"
        self.opened: list[EventLog] = []

    def open(self, retention: Retention | None = None) -> EventLog:
        log = open_log(self.url, retention=retention)
        self.opened.append(log)
        return log


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    skip_or_fail_without_redis()
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    name: str = request.param
    if name == "memory":
        return Backend(name, "memory://")
    if name == "sqlite":
        return Backend(name, f"sqlite:///{tmp_path / 'runs.db'}")
    url: str = request.getfixturevalue("redis_url")
    return Backend(name, f"{url}?prefix=test{next(_prefixes)}:")


@pytest.fixture
def log(backend: Backend) -> EventLog:
    return backend.open()


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    function = pyfuncitem.obj
    if not inspect.iscoroutinefunction(function):
        return None
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    backend: Backend | None = pyfuncitem.funcargs.get("backend")  # type: ignore[assignment]

    async def main() -> None:
        try:
            await asyncio.wait_for(function(**arguments), TEST_SECONDS)
        finally:
            for opened in backend.opened if backend is not None else ():
                await opened.aclose()

    asyncio.run(main())
    return True
