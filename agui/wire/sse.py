"""Server-Sent Events: the frame encoder and an incremental decoder.

Encoding is the form every AG-UI SDK emits: `data: <compact JSON>\\n\\n`, LF only (the official
TypeScript client splits frames on "\\n\\n" and cannot parse CRLF). Decoding accepts everything the
SSE standard allows: CRLF, LF or CR line ends, multi-line data, comments, `event:`/`id:`/`retry:`
fields, a leading byte-order mark, and frames split anywhere across network chunks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from agui.errors import SSEError
from agui.wire.codec import encode

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "KEEPALIVE",
    "SSEDecoder",
    "SSEError",
    "SSEMessage",
    "sse_data_frame",
    "sse_data_frames",
    "sse_frame",
]

DEFAULT_MAX_FRAME_BYTES = 10 * 1024 * 1024
"""The TypeScript client's limit: a frame larger than this is an error, not an allocation."""

KEEPALIVE = b": keep-alive\n\n"
"""A comment frame: every SSE parser ignores it, proxies see traffic."""

_BOM = b"\xef\xbb\xbf"
_LONG = 16 * 1024
"""An unfinished line this long is kept in pieces (below it, joining it with the next chunk costs
less than looking for its end first)."""
_join = b"".join
"""How the pieces of a line that spans chunks are put together: once, when the line ends
(tests/test_sse_large.py counts what goes through it)."""


def sse_frame(event: Any, id: str | None = None) -> bytes:
    """One event as an SSE frame: `data: <compact JSON>` and a blank line; with `id`, an
    `id: <id>` line first (the cursor a client sends back as Last-Event-ID)."""
    if id is None:
        return b"data: " + encode(event) + b"\n\n"
    return sse_data_frame(encode(event), id)


def sse_data_frame(data: bytes, id: str | None = None) -> bytes:
    """An event already encoded (its compact JSON, one line) as an SSE frame, with an `id:` line
    first when `id` is given. Raises ValueError for an id holding CR, LF or NUL, which the SSE
    format cannot carry."""
    if id is None:
        return b"data: " + data + b"\n\n"
    if "\n" in id or "\r" in id or "\0" in id:
        raise ValueError(f"an SSE id cannot hold CR, LF or NUL: {id!r}")
    return b"id: " + id.encode() + b"\ndata: " + data + b"\n\n"


def sse_data_frames(data: Sequence[bytes], ids: Sequence[str] | None = None) -> bytes:
    """Encoded events (each its compact JSON, one line) as SSE frames, joined: what
    `sse_data_frame` gives for each, with `ids[i]` as the id of `data[i]` when ids are given.
    Raises ValueError for an id holding CR, LF or NUL, before anything is returned.

    Built in C: the frames' constant parts and the events laid out by slice assignment into
    one list, joined once (a batch of stored events read back for a stream)."""
    count = len(data)
    if not count:
        return b""
    numbers = getattr(ids, "numbers", None)  # agui.store.base.NumberedCursors
    if type(numbers) is range and numbers.step == 1 and numbers.start >= 0:
        if len(numbers) != count:
            raise ValueError(f"{count} events, {len(numbers)} ids")
        return _numbered_frames(data, numbers.start)
    if ids is None:
        parts = [b"\n\ndata: "] * (2 * count)
        parts[0] = b"data: "
        parts[1::2] = data
        parts.append(b"\n\n")
        return b"".join(parts)
    text = "\n".join(ids)
    if "\r" in text or "\0" in text or text.count("\n") != count - 1:
        raise ValueError(f"an SSE id cannot hold CR, LF or NUL: {text!r}")
    parts = [b"\ndata: "] * (4 * count)  # id: ID \ndata: DATA \n\nid: ID ...
    parts[0::4] = [b"\n\nid: "] * count
    parts[0] = b"id: "
    parts[1::4] = text.encode().split(b"\n")  # no id holds LF (checked above)
    parts[3::4] = data
    parts.append(b"\n\n")
    return b"".join(parts)


_THOUSAND: list[bytes] = []
"""Each id's last three digits and the line after it (`042\ndata: `), for ids of 1000 up."""
_UNDER_THOUSAND: list[bytes] = []
"""The same for ids under 1000 (`42\ndata: `)."""


def _numbered_frames(data: Sequence[bytes], first: int) -> bytes:
    """`sse_data_frames(data, ids)` for the ids first, first + 1, ... in decimal, without a str
    per id: each frame's id line is the thousands' digits, shared by up to 1000 frames, and a
    precomputed piece from the last three digits to the data line's start (three parts a frame,
    laid out by slice assignment and joined once)."""
    if not _THOUSAND:
        _UNDER_THOUSAND.extend(b"%d\ndata: " % n for n in range(1000))
        _THOUSAND.extend(b"%03d\ndata: " % n for n in range(1000))
    count = len(data)
    parts = [b""] * (3 * count)
    parts[2::3] = data
    done = 0
    number = first
    while done < count:
        thousands, rest = divmod(number, 1000)
        run = min(count - done, 1000 - rest)  # the frames whose ids share `thousands`
        at = 3 * done
        end = 3 * (done + run)
        if thousands:
            parts[at:end:3] = [b"\n\nid: %d" % thousands] * run
            parts[at + 1 : end : 3] = _THOUSAND[rest : rest + run]
        else:
            parts[at:end:3] = [b"\n\nid: "] * run
            parts[at + 1 : end : 3] = _UNDER_THOUSAND[rest : rest + run]
        done += run
        number += run
    parts[0] = parts[0][2:]  # no blank line before the first frame
    parts.append(b"\n\n")
    return b"".join(parts)


@attrs.frozen
class SSEMessage:
    """One dispatched SSE message."""

    data: bytes
    """The data lines joined with LF."""
    event: str | None = None
    """The `event:` field, when the frame had one."""
    id: str | None = None
    """The `id:` field, when the frame had one."""
    retry: int | None = None
    """The `retry:` field in milliseconds, when the frame had a valid one."""


class SSEDecoder:
    """Feed it network chunks; it returns the messages each chunk completes.

    A message is dispatched at a blank line; call `close()` at the end of the stream to get a final
    message that lacks its blank line (as the TypeScript client does). Comment-only frames, such as
    keep-alives, dispatch nothing; `comments` counts them. A frame whose lines (with one byte for
    each line end) exceed `max_frame_bytes` raises SSEError, however it was chunked; the frames
    completed before it in the same chunk are returned first.
    """

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self.comments = 0
        # An incomplete line (or one ending in CR, which may precede LF), in the pieces it
        # arrived in: a line longer than a chunk is joined once, when it ends, never re-copied
        # on every chunk (which made one large frame quadratic).
        self._parts: list[bytes] = []
        self._unfinished = 0  # the bytes in _parts
        self._skip_lf = False  # a long line ended with the last chunk's CR: a first LF is its end
        self._start = True  # still at the stream's first bytes (a BOM may be there)
        self._data: list[bytes] = []
        self._size = 0
        self._event: str | None = None
        self._id: str | None = None
        self._retry: int | None = None
        self._error: SSEError | None = None  # raised on the next call, after the frames before it

    def feed(self, chunk: bytes) -> list[SSEMessage]:
        """The messages `chunk` completes."""
        return [
            m if type(m) is SSEMessage else SSEMessage(m, None, None, None)  # type: ignore[arg-type]
            for m in self.feed_frames(chunk)
        ]

    def feed_frames(self, chunk: bytes) -> list[bytes | SSEMessage]:
        """`feed`, with each message that has nothing but data given as its data (bytes, no
        SSEMessage made: the frames of an AG-UI stream), and the others as SSEMessage."""
        if self._error is not None:
            raise self._error
        if self._skip_lf and chunk:
            self._skip_lf = False  # the LF of a CRLF that ended a long line in the last chunk
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        parts = self._parts
        if (
            not parts
            and chunk[:6] == b"data: "
            and chunk.find(b"\n") == len(chunk) - 2
            and chunk[-1:] == b"\n"
            and self._size == 0
            and not self._start
            and len(chunk) < self.max_frame_bytes
            and b"\r" not in chunk
        ):
            # Exactly one frame of one data line (a server that writes each event on its own).
            return [chunk[6:-2]]
        if parts:
            if self._unfinished >= _LONG and not self._start and parts[-1][-1:] != b"\r":
                lf = chunk.find(b"\n")
                cr = chunk.find(b"\r")
                if lf < 0 and cr < 0:
                    # The middle of a line longer than a chunk: keep the piece, copy nothing.
                    parts.append(chunk)
                    self._unfinished += len(chunk)
                    if self._size + self._unfinished + 1 > self.max_frame_bytes:
                        raise SSEError(f"an SSE frame exceeds {self.max_frame_bytes} bytes")
                    return []
                if len(parts) > 1:
                    # A line that spanned whole chunks ends here: join its pieces once (the
                    # data alone, for a data line), then go on with the rest of the chunk.
                    end = lf if cr < 0 else cr if lf < 0 else min(lf, cr)
                    self._long_line(chunk[:end])
                    if chunk[end] == 13:  # CR: a CRLF is one line end
                        if end + 1 == len(chunk):
                            self._skip_lf = True
                        elif chunk[end + 1] == 10:
                            end += 1
                    rest = chunk[end + 1 :]
                    return self.feed_frames(rest) if rest else []
            parts.append(chunk)
            buf = _join(parts)  # once per line that spans chunks
        else:
            buf = chunk
        if self._start:
            if len(buf) < 3 and _BOM.startswith(buf):
                self._keep(buf)
                return []
            if buf.startswith(_BOM):
                buf = buf[3:]
            self._start = False
        if self._size == 0 and len(buf) < self.max_frame_bytes and b"\r" not in buf:
            # At a frame's start, the common stream: frames of one `data: ` line each, LF only.
            # Every newline is one of the "\n\n" that end frames, so no frame has another line
            # (a frame and its line end are shorter than the chunk, so within the limit).
            frames = buf.split(b"\n\n")
            tail = frames.pop()
            if b"\n" not in tail and buf.count(b"\n") == 2 * len(frames):
                for frame in frames:
                    if frame[:6] != b"data: ":
                        break
                else:
                    self._keep(tail)
                    return [frame[6:] for frame in frames]
        out: list[bytes | SSEMessage] = []
        if b"\r" in buf:
            lines = buf.splitlines(keepends=True)
            last = lines[-1] if lines else b""
            if last and (last[-1:] == b"\r" or last[-1:] != b"\n"):
                # Unfinished: no terminator yet, or a CR whose LF may arrive in the next chunk.
                self._keep(lines.pop())
            else:
                self._keep(b"")
            lines = [line.rstrip(b"\r\n") for line in lines]
        else:  # LF only (as every AG-UI server writes): the last piece is the unfinished line
            lines = buf.split(b"\n")
            self._keep(lines.pop())
        try:
            limit = self.max_frame_bytes
            for line in lines:
                # The lines of every event frame, read at once (what _line does with them).
                if not line:
                    data = self._data
                    if data:
                        joined = data[0] if len(data) == 1 else b"\n".join(data)
                        if self._event is None and self._id is None and self._retry is None:
                            out.append(joined)
                        else:
                            out.append(SSEMessage(joined, self._event, self._id, self._retry))
                        self._data = []
                    self._size = 0
                    self._event = self._id = None
                    self._retry = None
                    continue
                if line[:6] == b"data: ":
                    size = self._size + len(line) + 1
                    if size <= limit:
                        self._size = size
                        self._data.append(line[6:])
                        continue
                elif line[:4] == b"id: ":
                    size = self._size + len(line) + 1
                    value = line[4:]
                    if size <= limit and b"\0" not in value:
                        self._size = size
                        self._id = value.decode("utf-8", "replace")
                        continue
                self._line(line, out)
            # The unfinished line already counts toward its frame (so memory stays bounded), with
            # the same rule as when it is complete: the outcome must not depend on the chunking.
            unfinished = self._unfinished - (self._parts[0][-1:] == b"\r" if self._parts else 0)
            if unfinished and self._size + unfinished + 1 > self.max_frame_bytes:
                raise SSEError(f"an SSE frame exceeds {self.max_frame_bytes} bytes")
        except SSEError as exc:
            if not out:
                raise
            self._error = exc  # return the frames completed before it; raise on the next call
        return out

    def _long_line(self, end: bytes) -> None:
        """The line held in pieces ends with `end`: apply it, joining the pieces once (a data
        line's value without its "data: ", so the data is copied once)."""
        parts = self._parts
        parts.append(end)
        length = self._unfinished + len(end)
        first = parts[0]
        self._keep(b"")
        if first[:6] == b"data: ":
            size = self._size + length + 1
            if size > self.max_frame_bytes:
                raise SSEError(f"an SSE frame exceeds {self.max_frame_bytes} bytes")
            self._size = size
            parts[0] = first[6:]
            self._data.append(_join(parts))
        else:  # any other line (or one whose field name was cut): the general rules
            out: list[SSEMessage] = []
            self._line(_join(parts), out)  # a non-empty line dispatches nothing

    def _keep(self, unfinished: bytes) -> None:
        """The unfinished line after a chunk: what the next chunks continue."""
        self._parts = [unfinished] if unfinished else []
        self._unfinished = len(unfinished)

    def close(self) -> list[SSEMessage]:
        """End of stream: finish a last line and frame that had no terminator."""
        if self._error is not None:
            raise self._error
        out: list[SSEMessage] = []
        self._skip_lf = False
        if self._parts:
            pending = _join(self._parts)
            self._keep(b"")
            if not (self._start and _BOM.startswith(pending)):
                self._line(pending.rstrip(b"\r\n"), out)
        self._line(b"", out)
        return out

    def _line(self, line: bytes, out: list[Any]) -> None:
        if not line:
            if self._data:
                out.append(SSEMessage(b"\n".join(self._data), self._event, self._id, self._retry))
            self._data = []
            self._size = 0
            self._event = self._id = None
            self._retry = None
            return
        # Every line of a frame counts, with its line end: a frame is its bytes on the wire.
        self._size += len(line) + 1
        if self._size > self.max_frame_bytes:
            raise SSEError(f"an SSE frame exceeds {self.max_frame_bytes} bytes")
        if line[0] == 58:  # ":" starts a comment
            self.comments += 1
            return
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self._id = value.decode("utf-8", "replace")
        elif name == b"retry":
            if value.isdigit():
                self._retry = int(value)
        # any other field name is ignored, as the standard says
