"""A TCP proxy on loopback in front of a redis-server, for the Redis client's failure tests: it
forwards both ways, and on request loses the reply to a command (the command reaches Redis and is
done, the connection is closed before its reply reaches the client) or goes silent on the
connections open so far (a connection a firewall dropped without a word).

It runs on the test's event loop: `async with RedisProxy(port) as proxy:`, `proxy.url`.
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType


class _Link:
    """One client connection and its connection to Redis."""

    def __init__(self, writer: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.client = writer
        self.upstream = upstream
        self.silent = False  # forwards nothing more, either way, and closes nothing
        self.lose_next_reply = False
        self.heard: list[bytes] = []  # what the client sent once silent

    def close(self) -> None:
        for writer in (self.client, self.upstream):
            with contextlib.suppress(Exception):
                writer.close()


class RedisProxy:
    def __init__(self, port: int) -> None:
        self.port = port
        self.links: list[_Link] = []
        self.lose_reply_to: bytes | None = None
        """A command containing these bytes gets its reply lost (once), when set."""
        self.lost = 0
        """Replies lost so far."""
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        port = self._server.sockets[0].getsockname()[1]
        return f"redis://127.0.0.1:{port}/0"

    def go_silent(self) -> list[_Link]:
        """The connections open now forward nothing more (new ones work); returns them."""
        for link in self.links:
            link.silent = True
        return list(self.links)

    async def __aenter__(self) -> RedisProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.close()
        for link in self.links:
            link.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        link = _Link(writer, up_writer)
        self.links.append(link)
        for task in (
            asyncio.create_task(self._requests(link, reader)),
            asyncio.create_task(self._replies(link, up_reader)),
        ):
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _requests(self, link: _Link, reader: asyncio.StreamReader) -> None:
        try:
            while data := await reader.read(65536):
                if link.silent:
                    link.heard.append(data)
                    continue
                marker = self.lose_reply_to
                if marker is not None and marker in data:
                    self.lose_reply_to = None
                    link.lose_next_reply = True
                link.upstream.write(data)
                await link.upstream.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if not link.silent:
                link.close()

    async def _replies(self, link: _Link, reader: asyncio.StreamReader) -> None:
        try:
            while data := await reader.read(65536):
                if link.silent:
                    continue
                if link.lose_next_reply:
                    self.lost += 1
                    link.close()  # the command was done; its reply never arrives
                    return
                link.client.write(data)
                await link.client.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if not link.silent:
                link.close()
