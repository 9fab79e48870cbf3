"""The bulk of a run written fast: content events (TEXT_MESSAGE_CONTENT, TOOL_CALL_ARGS,
REASONING_MESSAGE_CONTENT) of one stream after another, as `encode` writes them.

Such an event with no optional member set is `{"type":...,"messageId":...,"delta":...}`: all but
its delta is the same for every delta of its stream. `content_writer` encodes that prefix once per
stream, with the generated encoder itself (an event of the stream with an empty delta, cut before
the delta's value), and writes each event as the prefix, the delta as a JSON string, and the end,
in one string encoded to UTF-8 once. The delta's JSON is the standard library's C string encoder
(`json.encoder.encode_basestring`), which escapes exactly what orjson escapes (`"`, `\\` and
the control characters, in the same forms; tests/test_content_writer.py compares them on every
code point). The checks are the encoder's: the id and the delta must be exactly str (else the
event goes through `encode`, which raises EncodeError), and a delta that is not UTF-8 (a lone
surrogate) goes through `encode` too. Any other event, or one with an optional member set, is written by
`encode` (or `sse_frame`). A class whose members are not exactly the ones this module knows (a
fork's extension member, say) is always written by the encoder.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection
from json.encoder import encode_basestring
from typing import Any, Protocol

import attrs
from agui_generated import ReasoningMessageContentEvent, TextMessageContentEvent, ToolCallArgsEvent

from agui.wire.codec import encode
from agui.wire.sse import sse_frame

__all__ = ["Gate", "content_writer"]

_OPTIONAL = ("timestamp", "raw_event", "metadata", "subagent_run_id")
_DELTA_END = b',"delta":""}'


def _content_classes() -> dict[type, tuple[str, Callable[[Any], Any]]]:
    """Each content class written fast: the name of its stream's id member, and its getter."""
    found: dict[type, tuple[str, Callable[[Any], Any]]] = {}
    for cls, ident in (
        (TextMessageContentEvent, "message_id"),
        (ToolCallArgsEvent, "tool_call_id"),
        (ReasoningMessageContentEvent, "message_id"),
    ):
        if tuple(f.name for f in attrs.fields(cls)) == (*_OPTIONAL, ident, "delta"):
            found[cls] = (ident, operator.attrgetter(ident))
    return found


_CONTENT = _content_classes()
_json_string: Callable[[str], str] = encode_basestring


class Gate(Protocol):
    """What decides, event by event, whether a content event may be written as 1.0 writes it
    (agui.wire.eras.Downgrade: whether its translation passes a text delta on unchanged)."""

    passes_text: bool
    """A content event goes out unchanged now (a non-empty one; an empty one too when
    `empty_delta`)."""
    empty_delta: bool


def content_writer(
    framed: bool = False,
    *,
    kinds: Collection[type] | None = None,
    slow: Callable[[Any], bytes] | None = None,
    gate: Gate | None = None,
) -> Callable[[Any], bytes]:
    """`encode(event)` for one stream of events, or `sse_frame(event)` with `framed=True`: the
    same bytes, content events written from a prefix their stream shares (see the module). One
    per response: it keeps the prefix of the last content stream written. A closure, not an
    object with __call__: a call costs half as much.

    kinds: the content classes written fast (default: all three). slow: what writes every
    other event (default: encode, or sse_frame when framed). gate: consulted for each content
    event (`passes_text`, `empty_delta`); when it says no, the event goes to `slow`. An era's
    translation uses both: its text deltas written here while it passes them on unchanged,
    everything else translated."""
    head = "data: " if framed else ""
    tail = "}\n\n" if framed else "}"
    if slow is None:
        slow = sse_frame if framed else encode
    content = _CONTENT if kinds is None else {k: v for k, v in _CONTENT.items() if k in kinds}
    kind: Any = None  # the class of the stream whose prefix is kept
    ident_of: Callable[[Any], Any] = _no_id
    current: str | None = None  # the stream's id
    prefix = ""  # the stream's frame up to its delta, as text

    def write(event: Any) -> bytes:
        nonlocal kind, ident_of, current, prefix
        if (
            type(event) is kind
            and event.subagent_run_id is None
            and event.timestamp is None
            and event.raw_event is None
            and event.metadata is None
            and ((ident := ident_of(event)) is current or (type(ident) is str and ident == current))
        ):
            delta = event.delta
            if type(delta) is str and (
                gate is None or (gate.passes_text and (delta != "" or gate.empty_delta))
            ):
                try:
                    return f"{prefix}{_json_string(delta)}{tail}".encode()
                except UnicodeEncodeError:  # a lone surrogate: encode says what is wrong
                    pass
            return slow(event)
        # An event of another stream, or no content event: a content event of the parent agent
        # with no optional member set starts a new prefix.
        found = content.get(type(event))
        if (
            found is not None
            and event.subagent_run_id is None
            and event.timestamp is None
            and event.raw_event is None
            and event.metadata is None
        ):
            name, getter = found
            ident = getter(event)
            if type(ident) is str and type(event.delta) is str:
                try:
                    template = encode(type(event)(**{name: ident, "delta": ""}))
                except Exception:  # the id cannot be encoded: encode says why, below
                    template = b""
                if template.endswith(_DELTA_END):
                    kind, ident_of, current = type(event), getter, ident
                    prefix = head + template[:-3].decode()  # up to `"delta":`
                    return write(event)
        return slow(event)

    return write


def _no_id(event: Any) -> None:  # pragma: no cover - only reached with no stream yet
    return None
