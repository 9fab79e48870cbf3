"""The durable-runs tests' fixtures: a real redis-server for the session (tests/store/support.py
starts it), `store_url` once per backend (memory, SQLite, Redis), `live(app)` serving an AgentApp
with uvicorn on loopback for the test, and `served(...)` for `agui serve` processes."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import live_server
from tests.store.support import redis_server, skip_or_fail_without_redis

from .support import served_processes

BACKENDS = ("memory", "sqlite", "redis")

_prefixes = itertools.count(1)


@pytest.fixture(scope="session")
def redis_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """redis://127.0.0.1:PORT/0 of a redis-server started for this session."""
    skip_or_fail_without_redis()
    with redis_server(tmp_path_factory.mktemp("durable-redis")) as url:
        yield url


@pytest.fixture
def redis_url(redis_base: str) -> str:
    """A Redis store URL with a key prefix of its own (one test's keys)."""
    return f"{redis_base}?prefix=durable{next(_prefixes)}:"


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    name: str = request.param
    if name == "memory":
        return "memory://"
    if name == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    url: str = request.getfixturevalue("redis_url")
    return url


@pytest.fixture
def live() -> Iterator[Callable[[Any], str]]:
    """`live(app)`: serve the ASGI app with uvicorn on a free loopback port until the end of
    the test (its lifespan included); returns the base URL."""
    with ExitStack() as stack:

        def start(app: Any) -> str:
            return stack.enter_context(live_server(app))

        yield start


@pytest.fixture
def served() -> Iterator[Any]:
    yield from served_processes()
