"""agui.wire.content.content_writer writes exactly what encode and sse_frame write, and fails
exactly where they fail: the server's fast path for the bulk of a run changes no byte."""

from __future__ import annotations

import enum
from typing import Any

import orjson
import pytest
from hypothesis import given, strategies as st

import agui
from agui.errors import EncodeError
from agui.wire.codec import encode
from agui.wire.content import _CONTENT, _json_string, content_writer
from agui.wire.sse import sse_frame


class Name(enum.StrEnum):
    M = "m"


def _outcome(write: Any, event: Any) -> Any:
    try:
        return write(event)
    except EncodeError as exc:
        return ("EncodeError", str(exc))


def _same(events: list[Any]) -> None:
    """Each writer, fed the events in order, against encode and sse_frame."""
    for framed, reference in ((False, encode), (True, sse_frame)):
        writer = content_writer(framed=framed)
        for event in events:
            assert _outcome(writer, event) == _outcome(reference, event), event


def test_every_content_class_is_written_fast() -> None:
    assert set(_CONTENT) == {
        agui.TextMessageContentEvent,
        agui.ToolCallArgsEvent,
        agui.ReasoningMessageContentEvent,
    }


def test_the_json_of_every_code_point_is_orjsons() -> None:
    # one character at a time: both escape character by character, with no context
    for code in range(0x110000):
        if 0xD800 <= code < 0xE000:
            continue
        text = chr(code)
        assert _json_string(text).encode() == orjson.dumps(text), hex(code)


def test_streams_ids_optional_members_and_invalid_values() -> None:
    text = agui.TextMessageContentEvent
    events: list[Any] = [
        agui.RunStartedEvent(thread_id="t", run_id="r"),
        text(message_id="m", delta="Hello"),
        text(message_id="m", delta=""),
        text(message_id="m", delta=' "quoted" \\ back\nslash\t\x00\x1f\x7f é ✓ \u2028 😀'),
        text(message_id="m", delta="\ud800"),  # a lone surrogate: EncodeError
        text(message_id="m", delta=5),  # type: ignore[arg-type]
        text(message_id="m", delta="after the errors"),
        text(message_id=Name.M, delta="an enum member as the id"),
        text(message_id="m", delta="again"),
        text(message_id="m", delta="stamped", timestamp=1),
        text(message_id="m", delta="with metadata", metadata={"k": [1, 2]}),
        text(message_id="m", delta="a subagent's", subagent_run_id="sub"),
        text(message_id="m", delta="raw", raw_event={"x": 1}),
        text(message_id='other é"', delta="another stream"),
        text(message_id="\udc00", delta="an id that is not UTF-8"),
        text(message_id=7, delta="an id that is no string"),  # type: ignore[arg-type]
        agui.ToolCallArgsEvent(tool_call_id='other é"', delta='{"a": 1}'),
        agui.ReasoningMessageContentEvent(message_id='other é"', delta="thinking"),
        text(message_id='other é"', delta="back to text"),
        agui.TextMessageEndEvent(message_id="m"),
        agui.RunFinishedEvent(thread_id="t", run_id="r"),
    ]
    _same(events)


@pytest.mark.parametrize(
    "cls, ident",
    [
        (agui.TextMessageContentEvent, "message_id"),
        (agui.ToolCallArgsEvent, "tool_call_id"),
        (agui.ReasoningMessageContentEvent, "message_id"),
    ],
)
@given(
    items=st.lists(
        st.tuples(st.sampled_from(["a", "b", 'ü"\\', ""]), st.text(max_size=12)), max_size=20
    )
)
def test_any_text(cls: Any, ident: str, items: list[tuple[str, str]]) -> None:
    _same([cls(**{ident: i, "delta": d}) for i, d in items])
