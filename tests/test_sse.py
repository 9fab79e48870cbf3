"""SSE framing: the encoder's exact bytes and the incremental decoder.

The decoder must give the same messages however the network splits the stream, accept everything
the SSE standard allows (CRLF, LF and CR line ends, multi-line data, comments, event/id/retry
fields, a BOM), and refuse a frame over its size limit.
"""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings, strategies as st

import agui
from agui.wire.sse import KEEPALIVE, SSEDecoder, SSEError, SSEMessage, sse_frame

BOM = b"\xef\xbb\xbf"
LS = "\u2028".encode()  # LINE SEPARATOR: a line break for str.splitlines, not for SSE

STREAM = (
    BOM
    + b": a comment before anything\r\n"
    + b"retry: 1500\r\n"
    + b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"a'
    + LS
    + b'b"}\r\n'
    + b"\r\n"
    + b"event: message\n"
    + b"id: 7\n"
    + b"data: line one\n"
    + b"data: line two\n"
    + b"\n"
    + b": keep-alive\n\n"
    + b"data:no space after the colon\r"
    + b"\r"
    + b"data: CR line, then a CRLF blank line\r\r\n"
    + b"data\n\n"
    + b"id: 8\nretry: soon\ndata: {}\n\n"
    + b"id: a\x00b\nunknown: field\ndata:  two spaces\n\n"
    + b"data: last, without its blank line"
)
"""One stream with every construct the decoder must accept."""

EXPECTED = [
    SSEMessage(
        b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"a' + LS + b'b"}', retry=1500
    ),
    SSEMessage(b"line one\nline two", event="message", id="7"),
    SSEMessage(b"no space after the colon"),
    SSEMessage(b"CR line, then a CRLF blank line"),
    SSEMessage(b""),
    SSEMessage(b"{}", id="8"),
    SSEMessage(b" two spaces"),
    SSEMessage(b"last, without its blank line"),
]
"""What STREAM decodes to, written out by hand (a BOM, comments, an invalid retry, an id holding
NUL and an unknown field contribute nothing)."""


def decode_chunks(chunks: list[bytes], max_frame_bytes: int | None = None) -> list[SSEMessage]:
    decoder = SSEDecoder() if max_frame_bytes is None else SSEDecoder(max_frame_bytes)
    out: list[SSEMessage] = []
    for chunk in chunks:
        out += decoder.feed(chunk)
    return out + decoder.close()


# ── the encoder ────────────────────────────────────────────────────────────────────────────────


def test_frame_is_data_compact_json_and_one_blank_line() -> None:
    """Encoder: exactly `data: <compact JSON>\\n\\n`, LF only, nothing else."""
    event = agui.TextMessageContentEvent(message_id="m1", delta="hi there\n\u2028")
    frame = sse_frame(event)
    assert frame == b"data: " + agui.encode(event) + b"\n\n"
    assert frame == (
        b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"hi there\\n'
        + LS
        + b'"}\n\n'
    )
    assert b"\r" not in frame and frame.count(b"\n") == 2
    assert json.loads(frame[len(b"data: ") : -2]) == {
        "type": "TEXT_MESSAGE_CONTENT",
        "messageId": "m1",
        "delta": "hi there\n\u2028",
    }


def test_encoded_frames_round_trip_through_the_decoder() -> None:
    """Encoder and decoder agree: each frame is one message whose data is the event's JSON."""
    events = [
        agui.RunStartedEvent(thread_id="t", run_id="r"),
        agui.TextMessageContentEvent(message_id="m", delta="a\u2028b\r\nc"),
        agui.RunFinishedEvent(thread_id="t", run_id="r"),
    ]
    stream = b"".join(sse_frame(e) for e in events)
    messages = decode_chunks([stream])
    assert [agui.decode(m.data) for m in messages] == events


# ── the decoder ────────────────────────────────────────────────────────────────────────────────


def test_whole_stream_decodes_to_the_expected_messages() -> None:
    """Decoder: CRLF/LF/CR line ends, multi-line data, comments, event/id/retry fields, a BOM
    and U+2028 inside JSON all decode as the SSE standard says."""
    decoder = SSEDecoder()
    assert decoder.feed(STREAM) + decoder.close() == EXPECTED
    assert decoder.comments == 2
    assert agui.decode(EXPECTED[0].data) == agui.TextMessageContentEvent(
        message_id="m1", delta="a\u2028b"
    )


@pytest.mark.parametrize("where", range(len(STREAM) + 1))
def test_split_at_every_byte_boundary_decodes_the_same(where: int) -> None:
    """Decoder: a stream split into two chunks at any byte decodes to the same messages."""
    assert decode_chunks([STREAM[:where], STREAM[where:]]) == EXPECTED


def test_one_byte_at_a_time_decodes_the_same() -> None:
    """Decoder: feeding one byte per chunk (every boundary at once) decodes the same."""
    assert decode_chunks([STREAM[i : i + 1] for i in range(len(STREAM))]) == EXPECTED


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, len(STREAM)), max_size=12))
def test_any_chunking_decodes_the_same(cuts: list[int]) -> None:
    """Decoder: any number of splits at any positions (including empty chunks) decode the same."""
    bounds = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in itertools.pairwise(bounds)]
    assert decode_chunks(chunks) == EXPECTED


LF_STREAM = (
    b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"a"}\n\n'
    + b"data: b\n\n"
    + b": keep-alive\n\n"
    + b"data: c\n\n"
    + b"id: 9\ndata: d\n\n"
    + b"data: e\n\n\n"
    + b"data: f\ndata: g\n\n"
    + b"data:h\n\n"
    + b"data: \n\n"
    + b"data: i\n\n"
)
"""LF only, as AG-UI servers write: plain one-line data frames (the decoder's fast path) among
frames that are not (a comment, an id, an extra blank line, two data lines, no space)."""

LF_EXPECTED = [
    SSEMessage(b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":"a"}'),
    SSEMessage(b"b"),
    SSEMessage(b"c"),
    SSEMessage(b"d", id="9"),
    SSEMessage(b"e"),
    SSEMessage(b"f\ng"),
    SSEMessage(b"h"),
    SSEMessage(b""),
    SSEMessage(b"i"),
]


@pytest.mark.parametrize("where", range(len(LF_STREAM) + 1))
def test_an_lf_stream_split_anywhere_decodes_the_same(where: int) -> None:
    """Decoder: an LF-only stream of plain data frames and others, in one chunk or split at any
    byte, decodes as the standard says."""
    assert decode_chunks([LF_STREAM]) == LF_EXPECTED
    assert decode_chunks([LF_STREAM[:where], LF_STREAM[where:]]) == LF_EXPECTED


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, len(LF_STREAM)), max_size=12))
def test_an_lf_stream_in_any_chunking_decodes_the_same(cuts: list[int]) -> None:
    """Decoder: the LF-only stream in any chunking decodes the same, with feed and with
    feed_frames (which gives a frame of data alone as its bytes)."""
    bounds = [0, *sorted(cuts), len(LF_STREAM)]
    chunks = [LF_STREAM[a:b] for a, b in itertools.pairwise(bounds)]
    assert decode_chunks(chunks) == LF_EXPECTED
    decoder = SSEDecoder()
    frames = [f for chunk in chunks for f in decoder.feed_frames(chunk)] + decoder.close()
    assert [f if isinstance(f, SSEMessage) else SSEMessage(f) for f in frames] == LF_EXPECTED
    assert [f for f in frames if isinstance(f, SSEMessage)] == [SSEMessage(b"d", id="9")]


def test_an_lf_stream_one_frame_per_chunk_decodes_the_same() -> None:
    """Decoder: each frame in a chunk of its own (as a server that writes every event on its
    own sends them), decodes the same."""
    frames = [f + b"\n\n" for f in LF_STREAM.split(b"\n\n")[:-1]]
    assert b"".join(frames) == LF_STREAM
    chunks = [b"", *frames, b""]
    assert decode_chunks(chunks) == LF_EXPECTED
    assert decode_chunks([b"data: first\n\n", *chunks]) == [SSEMessage(b"first"), *LF_EXPECTED]


def test_feed_frames_gives_plain_frames_as_bytes() -> None:
    """Decoder: feed_frames hands a frame with nothing but data over as its data, and a frame
    with an id, event or retry as an SSEMessage; feed gives SSEMessage for all of them."""
    stream = b"data: a\n\nid: 1\ndata: b\n\nevent: x\ndata: c\n\nretry: 5\ndata: d\n\ndata: e\n\n"
    assert SSEDecoder().feed_frames(stream) == [
        b"a",
        SSEMessage(b"b", id="1"),
        SSEMessage(b"c", event="x"),
        SSEMessage(b"d", retry=5),
        b"e",
    ]
    assert SSEDecoder().feed(stream) == [
        SSEMessage(b"a"),
        SSEMessage(b"b", id="1"),
        SSEMessage(b"c", event="x"),
        SSEMessage(b"d", retry=5),
        SSEMessage(b"e"),
    ]


def test_messages_are_dispatched_as_soon_as_their_blank_line_arrives() -> None:
    """Decoder: feed() returns a message in the call that completes it, not later."""
    decoder = SSEDecoder()
    assert decoder.feed(b"data: one\n") == []
    assert decoder.feed(b"\n") == [SSEMessage(b"one")]
    assert decoder.feed(b"data: two\r\n\r\ndata: thr") == [SSEMessage(b"two")]
    assert decoder.feed(b"ee\n\n") == [SSEMessage(b"three")]


def test_close_yields_a_final_frame_lacking_its_blank_line() -> None:
    """Decoder: close() dispatches a last frame that ended without a blank line (with or without
    a final line end), and nothing when there is none."""
    for tail in (b"", b"\n", b"\r", b"\r\n"):
        decoder = SSEDecoder()
        assert decoder.feed(b"data: a\n\ndata: b" + tail) == [SSEMessage(b"a")]
        assert decoder.close() == [SSEMessage(b"b")]
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\n") == [SSEMessage(b"a")]
    assert decoder.close() == []


def test_keep_alive_comments_dispatch_nothing() -> None:
    """Decoder: keep-alive comment frames dispatch no message (they are counted) and do not
    disturb the frames around them."""
    decoder = SSEDecoder()
    assert decoder.feed(KEEPALIVE * 3) == []
    assert decoder.comments == 3
    stream = KEEPALIVE + b"data: x\n\n" + KEEPALIVE + b"data: y\n: inside\ndata: z\n\n" + KEEPALIVE
    assert decoder.feed(stream) + decoder.close() == [SSEMessage(b"x"), SSEMessage(b"y\nz")]
    assert decoder.comments == 7


def test_a_lone_bom_and_an_empty_stream_decode_to_nothing() -> None:
    """Decoder: a stream that is only (part of) a BOM, or nothing at all, yields no message."""
    assert decode_chunks([]) == []
    assert decode_chunks([b""]) == []
    assert decode_chunks([BOM]) == []
    assert decode_chunks([BOM[:2]]) == []
    assert decode_chunks([BOM[:1], BOM[1:], b"data: x\n\n"]) == [SSEMessage(b"x")]


def test_only_a_leading_bom_is_removed() -> None:
    """Decoder: a BOM is skipped at the very start of the stream only; later it is part of a field
    name ("\ufeffdata" is an unknown field), as the standard says."""
    assert decode_chunks([BOM + b"data: x\n\n" + BOM + b"data: y\n\n"]) == [SSEMessage(b"x")]


# ── the frame size limit ───────────────────────────────────────────────────────────────────────


def test_a_frame_over_the_limit_raises() -> None:
    """Decoder: a frame larger than max_frame_bytes raises SSEError, whether it arrives whole,
    as many data lines, or as an endless line with no terminator."""
    with pytest.raises(SSEError):
        decode_chunks([b"data: " + b"x" * 200 + b"\n\n"], max_frame_bytes=100)
    with pytest.raises(SSEError):
        decode_chunks([b"data: " + b"x" * 40 + b"\n"] * 3 + [b"\n"], max_frame_bytes=100)
    decoder = SSEDecoder(max_frame_bytes=100)
    decoder.feed(b"data: ")
    with pytest.raises(SSEError):
        for _ in range(100):
            decoder.feed(b"x" * 10)  # never a line end: must not buffer without bound


def test_the_limit_is_per_frame() -> None:
    """Decoder: the size count restarts at each frame, so many frames under the limit pass."""
    frame = b"data: " + b"x" * 60 + b"\n\n"
    assert decode_chunks([frame * 50], max_frame_bytes=100) == [SSEMessage(b"x" * 60)] * 50


@pytest.mark.parametrize("line_end", [b"\r\n", b"\n"])
@pytest.mark.parametrize("limit", range(78, 112))
def test_whether_a_frame_fits_does_not_depend_on_the_chunking(limit: int, line_end: bytes) -> None:
    """Decoder: near the limit, a stream is accepted or refused the same way at every split
    (a frame must not be refused only because the network cut it in the wrong place)."""
    stream = (
        b": note\ndata: "
        + b"x" * 90
        + line_end * 2
        + b"data: "
        + b"y" * 80
        + b"\n\n"
        + b"data: "
        + b"z" * 70
        + b"\n\n"
    )

    def outcome(chunks: list[bytes]) -> list[SSEMessage] | str:
        try:
            return decode_chunks(chunks, max_frame_bytes=limit)
        except SSEError:
            return "refused"

    whole = outcome([stream])
    for where in range(len(stream) + 1):
        assert outcome([stream[:where], stream[where:]]) == whole, where


def test_frames_before_an_oversized_one_are_still_delivered() -> None:
    """Decoder: the frames completed before an oversized frame are returned (in every chunking)
    before SSEError, so a client can say which frame broke the limit."""
    stream = b"data: a\n\ndata: b\n\ndata: " + b"z" * 500 + b"\n\n"
    for where in range(len(stream) + 1):
        decoder = SSEDecoder(max_frame_bytes=100)
        got: list[SSEMessage] = []
        with pytest.raises(SSEError):
            got += decoder.feed(stream[:where])
            got += decoder.feed(stream[where:])
            got += decoder.close()
        assert got == [SSEMessage(b"a"), SSEMessage(b"b")], where
