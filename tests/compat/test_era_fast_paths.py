"""The era translation's fast paths for the bulk of a run (a text delta passed on unchanged)
give exactly what the general path gives: Downgrade.sse against the frames of `feed`, and
Downgrade.sse_batch against sse_data event by event, in every era, through streams that drop a
message, chunk streams, reasoning and empty deltas (which change what a delta becomes)."""

from __future__ import annotations

from typing import Any

import pytest

import agui
from agui.wire.codec import dumps, encode, to_json
from agui.wire.eras import ERAS, Downgrade

TEXT = agui.TextMessageContentEvent


def _stream() -> list[Any]:
    return [
        agui.RunStartedEvent(thread_id="t", run_id="r"),
        agui.TextMessageStartEvent(message_id="m", role=agui.TextMessageRole.ASSISTANT),
        TEXT(message_id="m", delta="one"),
        TEXT(message_id="m", delta=""),
        TEXT(message_id="m", delta=' "two" \\ é'),
        agui.TextMessageEndEvent(message_id="m"),
        agui.TextMessageStartEvent(message_id="u", role=agui.TextMessageRole.USER),
        TEXT(message_id="u", delta="a user's delta"),
        agui.TextMessageEndEvent(message_id="u"),
        agui.TextMessageChunkEvent(message_id="c", role=agui.TextMessageRole.USER, delta="x"),
        agui.TextMessageChunkEvent(delta="y"),
        agui.ReasoningStartEvent(message_id="r1"),
        agui.ReasoningMessageChunkEvent(message_id="rm", delta="thinking"),
        agui.TextMessageStartEvent(message_id="m2", role=agui.TextMessageRole.ASSISTANT),
        TEXT(message_id="m2", delta="three", timestamp=3),
        TEXT(message_id="m2", delta="four"),
        agui.TextMessageEndEvent(message_id="m2"),
        agui.ReasoningEndEvent(message_id="r1"),
        agui.RunFinishedEvent(thread_id="t", run_id="r"),
    ]


def _general(downgrade: Downgrade, event: Any) -> bytes:
    return b"".join(b"data: " + dumps(e) + b"\n\n" for e in downgrade.feed(to_json(event)))


@pytest.mark.parametrize("era", ERAS, ids=lambda era: era.name)
def test_sse_is_the_general_path(era: Any) -> None:
    fast, general, server = Downgrade(era), Downgrade(era), Downgrade(era)
    write = server.sse_writer()  # what AgentApp's producer frames with
    for event in _stream():
        expected = _general(general, event)
        assert fast.sse(event) == expected, event
        assert write(event) == expected, event
    assert fast.notes.summary() == general.notes.summary() == server.notes.summary()


@pytest.mark.parametrize("era", ERAS, ids=lambda era: era.name)
@pytest.mark.parametrize("with_ids", [True, False])
def test_sse_batch_is_sse_data_event_by_event(era: Any, with_ids: bool) -> None:
    data = [encode(event) for event in _stream()]
    cursors = [f"c{i}" for i in range(len(data))] if with_ids else None
    for size in (1, 3, len(data)):
        batched, single = Downgrade(era), Downgrade(era)
        got, expected = [], []
        for start in range(0, len(data), size):
            part = data[start : start + size]
            ids = None if cursors is None else cursors[start : start + size]
            got.append(batched.sse_batch(part, ids))
            expected.append(
                b"".join(
                    single.sse_data(d, None if ids is None else ids[i]) for i, d in enumerate(part)
                )
            )
        assert got == expected
        assert batched.notes.summary() == single.notes.summary()


def test_sse_batch_refuses_an_id_an_sse_frame_cannot_carry() -> None:
    downgrade = Downgrade(ERAS[0])
    data = [encode(TEXT(message_id="m", delta="x"))] * 2
    with pytest.raises(ValueError, match="CR, LF or NUL"):
        downgrade.sse_batch(data, ["ok", "bad\nid"])
