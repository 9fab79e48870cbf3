"""Large SSE frames: the decoder's work is linear in the size of a frame, however it is chunked.

A line longer than a network chunk is kept in the pieces it arrived in and joined once, when it
ends (agui.wire.sse._join); it used to be copied again with every chunk (`pending + chunk`), which
made one 8 MiB frame take seconds. Checked structurally, not by timing: the chunks are a bytes
type that refuses concatenation, and every join is counted, with the bytes it copies. The
speed itself is benchmarks/sse_large.py (`nox -s bench`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import pytest

from agui.wire import sse
from agui.wire.sse import SSEDecoder, SSEError, SSEMessage

MIB = 1024 * 1024
CHUNK = 64 * 1024


class Piece(bytes):
    """A network chunk that cannot be concatenated with `+`: the decoder must not copy an
    unfinished line by adding each chunk to it."""

    def __add__(self, other: object) -> bytes:
        raise AssertionError("a chunk was concatenated with +")

    def __radd__(self, other: object) -> bytes:
        raise AssertionError("a chunk was concatenated with +")


def pieces(data: bytes, size: int = CHUNK) -> Iterator[Piece]:
    for start in range(0, len(data), size):
        yield Piece(data[start : start + size])


@pytest.fixture
def joins(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The bytes of each join the decoder makes (agui.wire.sse._join counted)."""
    made: list[int] = []
    real: Callable[[list[bytes]], bytes] = b"".join

    def counted(parts: list[bytes]) -> bytes:
        joined = real(parts)
        made.append(len(joined))
        return joined

    monkeypatch.setattr(sse, "_join", counted, raising=False)
    return made


def decode(data: bytes, size: int = CHUNK, limit: int = 64 * MIB) -> list[SSEMessage]:
    decoder = SSEDecoder(max_frame_bytes=limit)
    out = [message for piece in pieces(data, size) for message in decoder.feed(piece)]
    return out + decoder.close()


def test_an_8_mib_frame_in_64_kib_chunks_is_joined_once(joins: list[int]) -> None:
    """128 chunks of one data line: no chunk is concatenated, one join copies the data once."""
    value = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"' + b"a" * (8 * MIB) + b'"}'
    messages = decode(b"data: " + value + b"\n\n")
    assert messages == [SSEMessage(value)]
    assert joins == [len(value)]


@pytest.mark.parametrize("size", [1000, 4096, CHUNK])
def test_the_bytes_copied_are_linear_in_the_stream(joins: list[int], size: int) -> None:
    """Whatever the chunk size, the bytes joined stay within a small multiple of the stream:
    each frame's data once, plus at most one short line's worth per chunk."""
    frames = [b"data: " + bytes([65 + n]) * (n * 300_000 + 17) + b"\n\n" for n in range(6)]
    stream = b"".join(frames)
    messages = decode(stream, size)
    assert [m.data for m in messages] == [f[6:-2] for f in frames]
    chunks = len(stream) // size + 1
    assert sum(joins) <= len(stream) + chunks * (sse._LONG + size)


LINE_ENDS = [b"\n", b"\r\n", b"\r"]


def long_stream(end: bytes) -> tuple[bytes, list[SSEMessage]]:
    """Frames with long lines of every kind, every line ended by `end`."""
    big = b"x" * 200_000
    stream = end.join(
        [
            b"id: " + b"7" * 70_000,
            b"event: " + b"e" * 50_000,
            b"data: " + big,
            b"data: second line",
            b"",
            b": " + b"c" * 90_000,  # a long comment: dispatches nothing
            b"",
            b"data:" + big,  # no space after the colon
            b"",
            b"data: short",
            b"",
            b"retry: 12",
            b"data: " + big + b"z",
            b"",
            b"",
        ]
    )
    expected = [
        SSEMessage(big + b"\nsecond line", event="e" * 50_000, id="7" * 70_000),
        SSEMessage(big),
        SSEMessage(b"short"),
        SSEMessage(big + b"z", retry=12),
    ]
    return stream, expected


@pytest.mark.parametrize("end", LINE_ENDS, ids=["LF", "CRLF", "CR"])
@pytest.mark.parametrize("size", [1, 7, 6000, 16 * 1024, 16 * 1024 + 1, CHUNK, 10**6])
def test_long_lines_decode_the_same_however_chunked(end: bytes, size: int) -> None:
    stream, expected = long_stream(end)
    if size == 1:
        stream = stream[:120_000] + stream[-20:]  # one byte at a time: keep it quick
        expected = []
    assert decode(stream, size) == (expected or decode(stream, len(stream)))


@pytest.mark.parametrize("cut", range(1, 8))
def test_a_crlf_or_a_field_name_cut_between_chunks(cut: int) -> None:
    """A long line whose CRLF, or whose "data: ", is split across two chunks."""
    big = b"y" * 100_000
    for stream in (
        b"data: " + big + b"\r\n\r\ndata: after\r\n\r\n",
        b"data: " + big + b"\r\rdata: after\r\r",
    ):
        head = len(b"data: ") + len(big) + 1  # just after the first CR
        for split in (head - 1, head, head + 1):
            decoder = SSEDecoder()
            chunks = [stream[i : min(i + 20_000, split)] for i in range(0, split, 20_000)]
            chunks += [stream[split : split + cut], stream[split + cut :]]
            got = [m for c in chunks for m in decoder.feed(Piece(c))] + decoder.close()
            assert got == [SSEMessage(big), SSEMessage(b"after")]
    named = b"data: " + big + b"\n\n"
    for split in range(1, 7):  # the field name itself cut after `split` bytes
        decoder = SSEDecoder()
        chunks = [named[:split], *(named[i : i + 30_000] for i in range(split, len(named), 30_000))]
        got = [m for c in chunks for m in decoder.feed(Piece(c))] + decoder.close()
        assert got == [SSEMessage(big)]


@pytest.mark.parametrize("size", [1000, CHUNK])
def test_the_limit_holds_for_a_long_line(size: int) -> None:
    """A frame over max_frame_bytes is refused however it is chunked, and while it streams:
    before its line ends."""
    limit = 1 * MIB
    for length in (limit - 7, limit - 6):  # "data: " + value + LF: the limit exactly, one over
        stream = b"data: " + b"a" * length + b"\n\n"
        decoder = SSEDecoder(max_frame_bytes=limit)
        if length == limit - 7:
            got = [m for c in pieces(stream, size) for m in decoder.feed(c)]
            assert [len(m.data) for m in got] == [length]
            continue
        with pytest.raises(SSEError):
            for c in pieces(stream, size):
                decoder.feed(c)
    endless = SSEDecoder(max_frame_bytes=limit)
    with pytest.raises(SSEError):
        for c in itertools.chain([Piece(b"data: ")], itertools.repeat(Piece(b"a" * size))):
            endless.feed(c)  # no line end ever: refused once the line is over the limit


def test_a_long_last_line_without_its_end_is_dispatched_on_close(joins: list[int]) -> None:
    value = b"q" * (3 * MIB)
    decoder = SSEDecoder()
    for c in pieces(b"data: " + value):
        assert decoder.feed(c) == []
    assert decoder.close() == [SSEMessage(value)]
    assert sum(joins) <= len(value) + 6 + CHUNK
