"""The Redis client RedisLog builds (issue 19): every timeout set explicitly, whatever redis-py's
defaults are (5.x-7.x: no socket timeout; 8.x: 5 s, which cut a follower's XREAD BLOCK 5000).

* The settings: connect, socket, XREAD BLOCK, health check, TCP keep-alive and retries on both
  pools, the followers' socket timeout above the block; the URL's query options of redis-py's
  names over the defaults, the parameters over the URL; refused values.
* A follower waits through a silence longer than every timeout, with no retry to hide a cut.
* A dead (stopped) server is noticed, by a command and by a follower, within the timeouts.
* A dropped connection and a timeout are retried; a write whose reply was lost is retried and
  stored once (START, APPEND, CLOSE_LOST carry a token); a connection gone silent is PINGed
  (health check) before a write is sent on it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from agui.store import StoreError

from .redis_proxy import RedisProxy
from .support import free_port, ping, redis_server
from .test_log import LEASE, event, lost, record, terminal

SHORT = 0.5
"""Every timeout of the short configurations, in seconds."""


def redis_log(url: str, **options: Any) -> Any:
    from agui.store.redis import RedisLog

    return RedisLog(url, **options)


def short(**options: Any) -> dict[str, Any]:
    """RedisLog's parameters with every timeout at SHORT (and `options`)."""
    return {
        "connect_timeout": SHORT,
        "socket_timeout": SHORT,
        "block": SHORT,
        "health_check_interval": SHORT,
        "keepalive": 1,
        **options,
    }


def side_client(url: str) -> Any:
    """A plain redis-py client for what the tests do beside the log (CLIENT KILL, XLEN...)."""
    import redis.asyncio as aioredis

    return aioredis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=10)


@contextmanager
def redis_server_on(directory: Path, port: int) -> Iterator[None]:
    """redis-server on 127.0.0.1:port (no persistence), until the end of the block."""
    process = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(directory)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while not ping(port):
            assert process.poll() is None and time.monotonic() < deadline, "no redis-server"
            time.sleep(0.02)
        yield
    finally:
        process.terminate()
        process.wait(10)


def kwargs(log: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """What each connection of the commands' pool and of the followers' pool is given."""
    return (
        log._redis.connection_pool.connection_kwargs,
        log._tails.connection_pool.connection_kwargs,
    )


# ── the settings ────────────────────────────────────────────────────────────────────────────


async def test_every_timeout_is_set_explicitly_on_both_pools(redis_url: str) -> None:
    from redis.backoff import EqualJitterBackoff

    log = redis_log(redis_url)
    try:
        assert log.settings == {
            "connect_timeout": 5.0,
            "socket_timeout": 10.0,
            "block": 5.0,
            "health_check_interval": 30.0,
            "keepalive": 30.0,
            "retries": 3,
        }
        commands, tails = kwargs(log)
        assert commands["socket_timeout"] == 10.0
        assert tails["socket_timeout"] == 15.0  # XREAD BLOCK 5 s + the reply's 10 s
        for options in (commands, tails):
            assert options["socket_connect_timeout"] == 5.0
            assert options["health_check_interval"] == 30.0
            assert options["socket_keepalive"] is True
            assert options["socket_keepalive_options"][socket.TCP_KEEPIDLE] == 30
            assert options["retry"]._retries == 3
            assert isinstance(options["retry"]._backoff, EqualJitterBackoff)
        # the connections themselves, and their sockets: TCP keep-alive on, probing after 30 s
        for client, timeout in ((log._redis, 10.0), (log._tails, 15.0)):
            assert await client.ping()
            (connection,) = client.connection_pool._available_connections
            assert connection.socket_timeout == timeout
            assert connection.socket_connect_timeout == 5.0
            assert connection.health_check_interval == 30.0
            assert connection.retry._retries == 3
            sock = connection._writer.transport.get_extra_info("socket")
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 30
    finally:
        await log.aclose()


async def test_url_options_take_precedence_over_defaults_and_parameters_over_them(
    redis_url: str,
) -> None:
    query = "socket_timeout=3&socket_connect_timeout=1.5&health_check_interval=7&client_name=a%20b"
    log = redis_log(f"{redis_url}?{query}")
    try:
        commands, tails = kwargs(log)
        assert commands["socket_timeout"] == 3.0
        assert tails["socket_timeout"] == 8.0  # the URL's socket timeout never cuts the block
        assert commands["socket_connect_timeout"] == tails["socket_connect_timeout"] == 1.5
        assert commands["health_check_interval"] == 7.0
        assert commands["client_name"] == "a b"  # other options go to redis-py as they are
        assert log.settings["keepalive"] == 30.0
    finally:
        await log.aclose()
    log = redis_log(f"{redis_url}?{query}&socket_keepalive=false", socket_timeout=2.0, block=1.0)
    try:
        commands, tails = kwargs(log)
        assert commands["socket_timeout"] == 2.0
        assert tails["socket_timeout"] == 3.0
        assert commands["socket_keepalive"] is False and tails["socket_keepalive"] is False
        assert log._block_ms == 1000
    finally:
        await log.aclose()
    refused: list[tuple[str, dict[str, Any]]] = [
        (f"{redis_url}?socket_timeout=0", {}),
        (f"{redis_url}?socket_timeout=soon", {}),
        (f"{redis_url}?socket_connect_timeout=inf", {}),
        (redis_url, {"block": -1.0}),
        (redis_url, {"socket_timeout": float("nan")}),
        (redis_url, {"health_check_interval": -1}),
        (redis_url, {"retries": -1}),
        (redis_url, {"retries": 1.5}),
    ]
    for url, options in refused:
        with pytest.raises(StoreError):
            redis_log(url, **options)


# ── silences, dead servers ──────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("where", ["parameters", "url"])
async def test_a_follower_waits_through_a_silence_longer_than_every_timeout(
    redis_url: str, where: str
) -> None:
    """retries=0: a cut of the blocked read would be an error here, not hidden by a retry."""
    if where == "url":
        url = f"{redis_url}?socket_timeout={SHORT}"
        log = redis_log(url, block=SHORT, retries=0, prefix="silent1:")
    else:
        log = redis_log(redis_url, **short(retries=0), prefix="silent2:")
    try:
        await log.start_run(record("run-1"), b"{}", exclusive=False)
        await log.append("run-1", [event("run-1", 0)])
        got: list[bytes] = []

        async def follow() -> None:
            async for stored in log.read("run-1", follow=True):
                got.append(stored.data)

        follower = asyncio.ensure_future(follow())
        await asyncio.sleep(3 * (SHORT + SHORT) + 1)  # 4 s: past the block and the timeouts
        assert not follower.done(), follower.exception()
        await log.append("run-1", [event("run-1", 1), terminal("run-1")], final=True)
        await asyncio.wait_for(follower, 5)
        assert got == [event("run-1", 0), event("run-1", 1), terminal("run-1")]
    finally:
        await log.aclose()


async def test_a_stopped_server_is_noticed_within_the_timeouts(tmp_path: Path) -> None:
    with redis_server(tmp_path) as url:
        side = side_client(url)
        pid = int((await side.info("server"))["process_id"])
        await side.aclose()
        log = redis_log(url, **short(retries=1))
        try:
            await log.start_run(record("run-1"), b"{}", exclusive=False)
            errors: list[BaseException] = []

            async def follow() -> None:
                try:
                    async for _ in log.read("run-1", follow=True):
                        pass
                except StoreError as error:
                    errors.append(error)

            follower = asyncio.ensure_future(follow())
            await asyncio.sleep(0.2)  # blocked in XREAD
            os.kill(pid, signal.SIGSTOP)
            try:
                # the client's own timeouts end them: two attempts of SHORT (the command) or of
                # the block and SHORT (the follower), a backoff of 0.5 s at most between
                with pytest.raises(StoreError, match="Timeout"):
                    await asyncio.wait_for(log.get_run("run-1"), 15)  # hang bound
                await asyncio.wait_for(follower, 25)  # hang bound
                assert errors and "Timeout" in str(errors[0])
            finally:
                os.kill(pid, signal.SIGCONT)
            assert (await log.get_run("run-1")) is not None  # back
        finally:
            await log.aclose()


async def test_refused_connections_fail_and_leave_the_log_usable(tmp_path: Path) -> None:
    """No Redis on the port: each command fails after the retries' backoff, and the next one
    too (redis-py 5.0.1's BlockingConnectionPool deadlocked on a failed connect: every command
    after hung for ever; the redis extra needs 5.0.2)."""
    port = free_port()
    log = redis_log(f"redis://127.0.0.1:{port}/0")
    try:
        for _ in range(2):
            with pytest.raises(StoreError, match="connecting"):
                await asyncio.wait_for(log.get_run("run-1"), 30)  # hang bound
        with redis_server_on(tmp_path, port):
            assert await log.get_run("run-1") is None  # Redis is there: the log works
    finally:
        await log.aclose()


# ── retries ─────────────────────────────────────────────────────────────────────────────────


async def test_a_follower_s_dropped_connection_is_retried(redis_url: str) -> None:
    log = redis_log(redis_url, prefix="dropped:")
    side = side_client(redis_url)
    try:
        await log.start_run(record("run-1"), b"{}", exclusive=False)
        follower = asyncio.ensure_future(
            asyncio.wait_for(
                _collect(log.read("run-1", follow=True)),
                15,
            )
        )
        await asyncio.sleep(0.2)  # blocked in XREAD
        killed = await side.execute_command("CLIENT", "KILL", "TYPE", "normal")
        assert killed >= 1  # the follower's connection, and the idle ones of the commands' pool
        await asyncio.sleep(0.1)
        await log.append("run-1", [event("run-1", 0), terminal("run-1")], final=True)
        assert await follower == [event("run-1", 0), terminal("run-1")]
    finally:
        await side.aclose()
        await log.aclose()


async def _collect(reader: Any) -> list[bytes]:
    return [stored.data async for stored in reader]


@pytest.mark.parametrize("retries", [None, 0])
async def test_a_timeout_is_retried_with_backoff(redis_url: str, retries: int | None) -> None:
    """Redis paused for 1 s (CLIENT PAUSE) answers a command with a 0.5 s timeout after it
    retried; retries=0 shows that the retry is what gets the answer."""
    log = redis_log(redis_url, **short(retries=retries), prefix=f"paused{retries}:")
    side = side_client(redis_url)
    try:
        await log.start_run(record("run-1"), b"{}", exclusive=False)
        await side.execute_command("CLIENT", "PAUSE", 1000, "ALL")
        if retries == 0:
            with pytest.raises(StoreError, match="Timeout"):
                await log.get_run("run-1")
        else:
            got = await log.get_run("run-1")
            assert got is not None and got.status == "running"
    finally:
        await side.execute_command("CLIENT", "UNPAUSE")
        await side.aclose()
        await log.aclose()


async def test_a_write_whose_reply_was_lost_is_retried_and_stored_once(redis_url: str) -> None:
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    side = side_client(redis_url)
    async with RedisProxy(port) as proxy:
        log = redis_log(proxy.url, prefix="lost:")
        try:
            # the scripts loaded first: a lost NOSCRIPT reply would prove nothing
            await log.start_run(record("warm"), b"{}", exclusive=False)
            await log.append("warm", [event("warm", 0)])
            await log.close_lost("warm", lost("warm"), time.time() + 2 * LEASE)

            proxy.lose_reply_to = b"run-1"  # START: stored, its reply lost, retried
            await log.start_run(record("run-1", lease=0.0), b"{}", exclusive=True)
            assert proxy.lost == 1

            proxy.lose_reply_to = b"event number 0"  # APPEND
            cursors = await log.append("run-1", [event("run-1", 0), event("run-1", 1)])
            assert proxy.lost == 2
            assert await side.xlen("lost:events:run-1") == 1
            stored = [(s.cursor, s.data) async for s in log.read("run-1")]
            assert stored == list(zip(cursors, [event("run-1", 0), event("run-1", 1)], strict=True))

            proxy.lose_reply_to = b"RUN_LOST"  # CLOSE_LOST: this call closed the run
            assert await log.close_lost("run-1", lost("run-1"), time.time() + 1)
            assert proxy.lost == 3
            assert await side.xlen("lost:events:run-1") == 2
            datas = [s.data async for s in log.read("run-1")]
            assert datas == [event("run-1", 0), event("run-1", 1), lost("run-1")]
            finished = await log.get_run("run-1")
            assert finished is not None and finished.status == "finished"
        finally:
            await log.aclose()
            await side.aclose()


async def test_a_connection_gone_silent_is_pinged_before_a_write(redis_url: str) -> None:
    """A pooled connection a firewall dropped without a word: after health_check_interval idle,
    a PING goes first, and its timeout replaces the connection before the write is sent."""
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    async with RedisProxy(port) as proxy:
        log = redis_log(proxy.url, **short(), prefix="silent-link:")
        try:
            await log.start_run(record("run-1"), b"{}", exclusive=False)
            gone = proxy.go_silent()
            await asyncio.sleep(SHORT + 0.2)  # idle for longer than the interval
            await log.append("run-1", [event("run-1", 0)])
            heard = b"".join(b"".join(link.heard) for link in gone)
            assert b"PING" in heard
            assert b"EVALSHA" not in heard and b"event number" not in heard
        finally:
            await log.aclose()
