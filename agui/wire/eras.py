"""Eras: what pre-1.0 AG-UI peers accept and send, and the JSON-level translations both ways.

No 0.0.x release of @ag-ui/client sends `protocolVersion`, and each one validates every event it
receives against the zod schemas of the @ag-ui/core it bundles: a closed union of event types (one
type it does not know fails the whole run), fixed message roles, fixed content parts. An `Era` is
one span of releases whose schemas take the same things; `ERAS` lists them, read from the real
packages (the eras' first releases are the first ones found to accept each addition; see
docs/compatibility.md for the table and how it was measured).

Both directions work on JSON objects (the wire form), never on the models, because the shapes an
old peer takes or sends (THINKING_* events, `{"type": "binary"}` content parts) are not in the
1.0 contract:

* `Downgrade`: a 1.0 event stream as an era takes it (the server, for a peer that declares no
  protocol version). It translates what an era can carry in another form (REASONING_* become
  THINKING_*, content parts become text or legacy binary parts) and drops what it cannot take,
  counting both so the server can log them once per run, and counting apart the drops that the
  newest era (`NEWEST`) would have kept, so that a server sending an older era's stream can say
  what a newer front end loses.
* `upgrade_input`: a RunAgentInput sent by a pre-1.0 client, with the retired binary content
  parts upgraded to the 1.0 media parts, as the official 1.0 client upgrades them.
* `LegacyReader`: a pre-1.0 server's events as the official 1.0 client reads them (THINKING_*
  become REASONING_*, binary parts in MESSAGES_SNAPSHOT and RUN_STARTED.input are upgraded), each
  change with a warning.

`Compat` is the server's policy (`AgentApp(compat=...)`): "auto" (a request without
protocolVersion gets the oldest era, the stream every 0.0.x release from 0.0.35 on accepts), a
pinned release ("0.0.59"), or "off".
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Literal

import attrs
import orjson
from agui_generated import TextMessageContentEvent

from agui.wire.codec import TAGS, dumps, to_json
from agui.wire.content import content_writer
from agui.wire.sse import sse_data_frame, sse_data_frames

__all__ = [
    "ERAS",
    "NEWEST",
    "OLDEST",
    "Compat",
    "Downgrade",
    "Era",
    "LegacyReader",
    "era_of",
    "upgrade_input",
]

# ── the eras ────────────────────────────────────────────────────────────────────────────────────

_BASE_EVENTS = frozenset(
    {
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TEXT_MESSAGE_CHUNK",
        "THINKING_TEXT_MESSAGE_START",
        "THINKING_TEXT_MESSAGE_CONTENT",
        "THINKING_TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_CHUNK",
        "TOOL_CALL_RESULT",
        "STATE_SNAPSHOT",
        "STATE_DELTA",
        "MESSAGES_SNAPSHOT",
        "RAW",
        "CUSTOM",
        "RUN_STARTED",
        "RUN_FINISHED",
        "RUN_ERROR",
        "STEP_STARTED",
        "STEP_FINISHED",
    }
)
_THINKING_SPAN = frozenset({"THINKING_START", "THINKING_END"})
_ACTIVITY = frozenset({"ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA"})
_REASONING = frozenset(
    {
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_MESSAGE_CHUNK",
        "REASONING_END",
        "REASONING_ENCRYPTED_VALUE",
    }
)
_SUBAGENT = frozenset({"SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR"})
_CURRENT_EVENTS = frozenset(TAGS["Event"])
"""The event types of the 1.0 contract (read from the generated codec)."""
_THINKING = frozenset(t for t in _BASE_EVENTS | _THINKING_SPAN if t.startswith("THINKING_"))

_BASE_ROLES = frozenset({"developer", "system", "assistant", "user", "tool"})
_TEXT_ROLES = frozenset({"developer", "system", "assistant", "user"})
_MEDIA = tuple(
    tag for tag, model in TAGS["ContentPart"].items() if "source" in attrs.fields_dict(model)
)
"""The content parts with a source: the 1.0 media parts (image, audio, video, document), and an
extension's part that has one (read from the generated codec, so a fork's are here too)."""

Parts = Literal["none", "binary", "typed"]

_PART_TYPES: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "binary": frozenset({"text", "binary"}),
    "typed": frozenset({"text", "binary", "image", "audio", "video", "document"}),
}
"""The content part types each `Era.parts` takes, as its zod union lists them (a closed union:
one part of another type fails the whole run with `invalid_union_discriminator`)."""
_STATUSES = frozenset({"resolved", "cancelled"})
"""The resume statuses of RUN_STARTED.input the eras that validate it take (a closed enum)."""
_ENCRYPTED_SUBTYPES = frozenset({"tool-call", "message"})
"""The REASONING_ENCRYPTED_VALUE subtypes every era with that event takes (a closed union)."""
_SUBAGENT_OUTCOMES: dict[str, frozenset[str]] = {
    "success": frozenset({"type"}),
    "suspended": frozenset({"type", "interruptIds"}),
}
"""The SUBAGENT_FINISHED outcomes 0.0.59 takes, each with its members: closed objects (zod
`.strict()`), so a member it does not know fails the run, as does another type."""


@attrs.frozen
class Era:
    """What the releases from `first` on (up to the next era) accept in the events they receive.

    Members an era does not know are not listed: every 0.0.x schema is a zod object that removes
    unknown members silently, so they are sent as they are."""

    name: str
    """The era's first release, such as "0.0.45"."""
    releases: str
    """The releases it covers, in words."""
    events: frozenset[str]
    """The event types its schema's union takes."""
    roles: frozenset[str]
    """The message roles it takes in MESSAGES_SNAPSHOT (and RUN_STARTED.input)."""
    text_roles: frozenset[str]
    """The roles TEXT_MESSAGE_START and TEXT_MESSAGE_CHUNK may carry."""
    role_required: bool
    """TEXT_MESSAGE_START must carry its role (no default)."""
    parts: Parts
    """A user message's content: a string only ("none"), text and legacy binary parts
    ("binary"), or text, binary and the media parts with data or url sources ("typed")."""
    empty_delta: bool
    """A TEXT_/REASONING_MESSAGE_CONTENT (THINKING_TEXT_MESSAGE_CONTENT) delta may be ""."""
    outcomes: frozenset[str] | None
    """The RUN_FINISHED outcomes it takes (closed objects); None: the member is unknown to it
    (removed by its schema, so an interrupted run looks finished to it)."""
    run_input: bool
    """RUN_STARTED.input is validated (its tools and context are required arrays)."""

    @property
    def version(self) -> tuple[int, ...]:
        return _numbers(self.name)


_E35 = Era(
    name="0.0.35",
    releases="0.0.35 – 0.0.36",
    events=_BASE_EVENTS,
    roles=_BASE_ROLES,
    text_roles=frozenset({"assistant"}),
    role_required=True,
    parts="none",
    empty_delta=False,
    outcomes=None,
    run_input=False,
)
_E37 = attrs.evolve(
    _E35,
    name="0.0.37",
    releases="0.0.37 – 0.0.40",
    events=_BASE_EVENTS | _THINKING_SPAN,
    text_roles=_TEXT_ROLES,
    role_required=False,
)
_E41 = attrs.evolve(
    _E37,
    name="0.0.41",
    releases="0.0.41 – 0.0.44",
    events=_E37.events | _ACTIVITY,
    roles=_BASE_ROLES | {"activity"},
    parts="binary",
    run_input=True,
)
_E45 = attrs.evolve(
    _E41,
    name="0.0.45",
    releases="0.0.45 – 0.0.49",
    events=_E41.events | _REASONING,
    roles=_E41.roles | {"reasoning"},
)
_E50 = attrs.evolve(
    _E45, name="0.0.50", releases="0.0.50 – 0.0.54", parts="typed", empty_delta=True
)
_E55 = attrs.evolve(
    _E50,
    name="0.0.55",
    releases="0.0.55 – 0.0.58",
    outcomes=frozenset({"success", "interrupt"}),
)
_E59 = attrs.evolve(_E55, name="0.0.59", releases="0.0.59", events=_E55.events | _SUBAGENT)

ERAS: tuple[Era, ...] = (_E35, _E37, _E41, _E45, _E50, _E55, _E59)
"""The pre-1.0 eras, oldest first."""
OLDEST = _E35
"""The era whose stream every 0.0.x release from 0.0.35 on accepts."""
NEWEST = ERAS[-1]
"""The latest pre-1.0 era: what the newest 0.0.x release takes."""

_VERSION = re.compile(r"^\d+(\.\d+){1,2}$")


def _numbers(version: str) -> tuple[int, ...]:
    numbers = tuple(int(part) for part in version.split("."))
    return numbers + (0,) * (3 - len(numbers))


def era_of(version: str) -> Era | None:
    """The era of a release or protocol version ("0.0.47" is in the 0.0.45 era; a version whose
    own era was not measured gets the newest era before it, whose stream it accepts). None for
    1.0 and later. Raises ValueError for something that is no version, or one older than
    0.0.35."""
    if not _VERSION.match(version):
        raise ValueError(f"{version!r} is not a version such as 0.0.45")
    numbers = _numbers(version)
    if numbers >= (1, 0, 0) or numbers >= (0, 1, 0):
        return None
    found = None
    for era in ERAS:
        if era.version <= numbers:
            found = era
    if found is None:
        raise ValueError(f"releases before {OLDEST.name} are not supported (asked for {version})")
    return found


@attrs.frozen
class Compat:
    """The server's policy for peers that declare no protocol version (AgentApp's `compat`).

    "auto": such a peer gets the oldest era's stream. A release ("0.0.59"): it gets that
    release's era (a deployment that knows its front end keeps what that release takes). "off":
    every peer gets the 1.0 stream. A peer that declares a version gets the stream of that
    version (unchanged for 1.0; "off" never translates)."""

    setting: str
    era: Era | None
    """The era of a request without protocolVersion (None: no translation)."""

    @classmethod
    def parse(cls, setting: str) -> Compat:
        """Raises ValueError for anything but "auto", "off" or a 0.0.x release from 0.0.35 on."""
        if setting == "auto":
            return cls(setting, OLDEST)
        if setting == "off":
            return cls(setting, None)
        try:
            era = era_of(setting)
        except ValueError as exc:
            raise ValueError(
                f'compat is "auto", "off" or a 0.0.x release such as "0.0.59": {exc}'
            ) from None
        if era is None:
            raise ValueError(
                f'compat {setting!r} names no pre-1.0 release; use "off" to send the 1.0 stream'
            )
        return cls(setting, era)

    def era_for(self, declared: str | None) -> Era | None:
        """The era to answer a request in, from its protocolVersion (None: not declared)."""
        if self.setting == "off":
            return None
        if declared is None:
            return self.era
        try:
            return era_of(declared)
        except ValueError:
            return None  # a version this server cannot read: the stream it speaks


# ── content ─────────────────────────────────────────────────────────────────────────────────────


def _text_of(parts: list[Any], dropped: list[Any]) -> str:
    """Content parts flattened to their text (joined with nothing, as the official 1.0 client
    flattens for a <=0.0.39 peer); the other parts are added to `dropped`."""
    texts = []
    for part in parts:
        if (
            isinstance(part, dict)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        ):
            texts.append(part["text"])
        else:
            dropped.append(part)
    return "".join(texts)


def _part_kind(part: Any) -> str:
    """How a content part is named in the notes: its type."""
    return str(part.get("type")) if isinstance(part, dict) else type(part).__name__


def _to_binary(part: dict[str, Any]) -> dict[str, Any] | None:
    """A 1.0 media part as the legacy binary part (None: it has no source to carry)."""
    source = part.get("source")
    if not isinstance(source, dict) or not isinstance(source.get("value"), str):
        return None
    mime = source.get("mimeType")
    if not isinstance(mime, str):
        kind = part.get("type")
        mime = f"{kind}/*" if kind in ("image", "audio", "video") else "application/octet-stream"
    binary: dict[str, Any] = {"type": "binary", "mimeType": mime}
    kind = source.get("type")
    binary["data" if kind == "data" else "url" if kind == "url" else "id"] = source["value"]
    metadata = part.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("filename"), str):
        binary["filename"] = metadata["filename"]
    return binary


def _listed(counter: Counter[str]) -> str:
    """A Counter of descriptions in words: "REASONING_* events (5x), empty deltas"."""
    return ", ".join(f"{what} ({n}x)" if n > 1 else what for what, n in counter.items())


class _Notes:
    """What a translation changed, counted: `translated` and `dropped`, by description; `newer`,
    the part of `dropped` that a client of the newest era (NEWEST) would have read."""

    def __init__(self) -> None:
        self.translated: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self.newer: Counter[str] = Counter()

    def __bool__(self) -> bool:
        return bool(self.translated or self.dropped)

    def drop(self, what: str, newest_takes: bool) -> None:
        """Count a drop; `newest_takes`: NEWEST would have sent it (kept or translated)."""
        self.dropped[what] += 1
        if newest_takes:
            self.newer[what] += 1

    def lost(self) -> str:
        """The drops a client of the newest era would have read, in words ("": none)."""
        return _listed(self.newer)

    def summary(self) -> str:
        said = []
        if self.translated:
            said.append(f"translated {_listed(self.translated)}")
        if self.dropped:
            said.append(f"dropped {_listed(self.dropped)}")
        return "; ".join(said)


def _messages_for(era: Era, messages: list[Any], notes: _Notes) -> list[Any]:
    out = []
    for message in messages:
        if not isinstance(message, dict):
            out.append(message)
            continue
        role = message.get("role")
        if role not in era.roles:
            notes.drop(f"{role} messages", role in NEWEST.roles)
            continue
        content = message.get("content")
        if isinstance(content, list):
            if role == "tool" or era.parts == "none":
                dropped: list[Any] = []
                message = {**message, "content": _text_of(content, dropped)}
                notes.translated[f"{role} message content parts to text"] += 1
                # NEWEST flattens a tool message's parts too; a user message's it keeps
                kept = role != "tool" and NEWEST.parts != "none"
                for part in dropped:
                    notes.drop(
                        f"{_part_kind(part)} content parts",
                        kept and bool(_parts_for(NEWEST, [part], _Notes())),
                    )
            else:
                message = {**message, "content": _parts_for(era, content, notes)}
        out.append(message)
    return out


def _parts_for(era: Era, parts: list[Any], notes: _Notes) -> list[Any]:
    """A user message's content parts as `era` takes them (an era with parts). A part of a type
    the era does not know (an extension's, such as a fork's location part) would fail the whole
    run: one with a source becomes a legacy binary part, as a 1.0 media part does for an era
    before them; any other is removed and counted, since nothing says what its text would be."""
    known = _PART_TYPES[era.parts]
    out = []
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        if isinstance(part, dict) and (kind in _MEDIA or isinstance(part.get("source"), dict)):
            source = part.get("source")
            source_kind = source.get("type") if isinstance(source, dict) else None
            if kind in known and source_kind in ("data", "url"):
                out.append(part)
                continue
            binary = _to_binary(part)
            if binary is None:
                notes.drop(
                    f"{kind} content parts",
                    kind in _PART_TYPES[NEWEST.parts] and source_kind in ("data", "url"),
                )
                continue
            notes.translated[f"{kind} parts to binary parts"] += 1
            out.append(binary)
        elif kind in known:
            out.append(part)
        else:
            notes.drop(f"{_part_kind(part)} content parts", kind in _PART_TYPES[NEWEST.parts])
    return out


# ── 1.0 -> an era ───────────────────────────────────────────────────────────────────────────────

_KEEPS_CHUNKS_OPEN = frozenset(
    {"RAW", "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "REASONING_ENCRYPTED_VALUE", "SUBAGENT_STARTED"}
)
"""The events that leave an open chunk stream open (every other event closes it)."""
_KEEPS_TEXT_CHUNKS_DROPPED = _KEEPS_CHUNKS_OPEN | {"TEXT_MESSAGE_CHUNK"}
"""The events that leave a TEXT_MESSAGE_CHUNK stream being dropped still dropped."""


_TEXT_CONTENT = b'{"type":"TEXT_MESSAGE_CONTENT",'
"""How agui.encode starts a TEXT_MESSAGE_CONTENT event's JSON (the type first, compact)."""
_AFTER_TEXT_CONTENT = b"}" + _TEXT_CONTENT


class Downgrade:
    """A 1.0 event stream as `era` takes it, event by event (JSON objects in, JSON objects out).

    One per stream: it follows the reasoning spans and messages it turns into THINKING_* events,
    and the messages it drops. `notes` counts what was translated and what was dropped."""

    def __init__(self, era: Era) -> None:
        self.era = era
        self.notes = _Notes()
        self._thinking = "THINKING_START" in era.events and "REASONING_START" not in era.events
        self._span = False  # a THINKING span is open
        self._own_span = False  # ... opened here for a reasoning message outside any span
        self._message: str | None = None  # the reasoning message open as THINKING text
        self._chunked = False  # ... opened by a REASONING_MESSAGE_CHUNK
        self._dropped_text: set[str] = set()  # text messages whose role the era refuses
        self._dropping_chunks: str | None = None  # a TEXT_MESSAGE_CHUNK stream being dropped
        # The era takes TEXT_MESSAGE_CONTENT as 1.0 sends it (sse_data's shortcut for the most
        # frequent event of all).
        self._plain_text = "TEXT_MESSAGE_CONTENT" in era.events
        self.empty_delta = era.empty_delta
        self.passes_text = self._passes_text()
        """`feed` passes a text delta on unchanged now (a non-empty one; an empty one too when
        `empty_delta`): kept up to date by `feed`, read by the fast paths."""
        self._writer = self.sse_writer()

    def sse_writer(self) -> Callable[[Any], bytes]:
        """`sse` as a closure for a server's producer: a text delta passed on unchanged is
        written as 1.0 writes it (agui.wire.content, gated by `passes_text`), in one call."""
        return content_writer(
            framed=True, kinds=(TextMessageContentEvent,), slow=self._sse, gate=self
        )

    # framing, for the server
    def sse(self, event: Any) -> bytes:
        """An event model as the SSE frames of its translation (b"" when it is dropped). Raises
        EncodeError as agui.wire.sse.sse_frame does."""
        # A text delta, in the state where `feed` passes it on unchanged, is framed as 1.0
        # frames it (the bulk of a run; `feed` would make a JSON object and write it anew).
        return self._writer(event)

    def _sse(self, event: Any) -> bytes:
        """`sse` through `feed`, for every event."""
        return b"".join(b"data: " + dumps(e) + b"\n\n" for e in self.feed(to_json(event)))

    def sse_data(self, data: bytes, id: str | None = None) -> bytes:
        """An encoded event (its JSON, one line) as the SSE frames of its translation; `id`
        goes on the last of them (b"" when the event is dropped). An event the era takes as it
        is keeps its JSON: `data` is sent, not written anew."""
        if data.startswith(_TEXT_CONTENT) and self.passes_text and b'"delta":""' not in data:
            # A text delta, in the state where `feed` passes it on unchanged: not decoded.
            return sse_data_frame(data, id)
        event = orjson.loads(data)
        events = self.feed(event)
        if not events:
            return b""
        if len(events) == 1 and events[0] is event:
            return sse_data_frame(data, id)
        frames = [sse_data_frame(dumps(e)) for e in events[:-1]]
        frames.append(sse_data_frame(dumps(events[-1]), id))
        return b"".join(frames)

    def sse_batch(self, events: Sequence[bytes], cursors: Sequence[str] | None = None) -> bytes:
        """`sse_data` of each encoded event (with the cursor of the same index as its `id`),
        joined: a run of text deltas the era takes as they are is framed without a step of
        `sse_data` each (the bulk of a stored run read back for a pre-1.0 peer). Raises
        ValueError for a cursor holding CR, LF or NUL, before anything is returned."""
        if self.passes_text and events and events[0].startswith(_TEXT_CONTENT):
            # Text deltas only, all passed on unchanged (the bulk of a run): checked and framed
            # in C. Joined as they are, each event after the first starts right after the `}`
            # that ends the one before: `}{"type":"TEXT_MESSAGE_CONTENT",` is found exactly at
            # those boundaries (counted), never inside an event of valid JSON (outside strings
            # `}{` is not JSON, inside them `"` is escaped). No event holds LF (one memchr).
            joined = b"".join(events)
            if (
                b"\n" not in joined
                and joined.count(_AFTER_TEXT_CONTENT) == len(events) - 1
                and b'"delta":""' not in joined
            ):
                return sse_data_frames(events, cursors)
        parts: list[bytes] = []
        for i, data in enumerate(events):
            if self.passes_text and data.startswith(_TEXT_CONTENT) and b'"delta":""' not in data:
                if cursors is None:
                    parts += (b"data: ", data, b"\n\n")
                else:
                    parts += (b"id: ", cursors[i].encode(), b"\ndata: ", data, b"\n\n")
                continue
            parts.append(self.sse_data(data, None if cursors is None else cursors[i]))
        if cursors is not None:
            ids = "\n".join(cursors)
            if "\r" in ids or "\0" in ids or ids.count("\n") != len(cursors) - 1:
                raise ValueError(f"an SSE id cannot hold CR, LF or NUL: {ids!r}")
        return b"".join(parts)

    def _passes_text(self) -> bool:
        """Whether `feed` now passes a text delta on unchanged (unless it is empty)."""
        return (
            self._plain_text
            and not self._chunked
            and self._dropping_chunks is None
            and not self._dropped_text
        )

    def feed(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """One 1.0 event (its JSON object); the events the era gets instead, in order."""
        out = self._feed(event)
        self.passes_text = self._passes_text()  # every change of the state is in _feed
        return out

    def _feed(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        kind = event.get("type")
        era = self.era
        out: list[dict[str, Any]] = []
        if self._chunked and kind not in _KEEPS_CHUNKS_OPEN and kind != "REASONING_MESSAGE_CHUNK":
            self._close_message(out)
        if self._dropping_chunks is not None and kind not in _KEEPS_TEXT_CHUNKS_DROPPED:
            self._dropping_chunks = None
        if kind in _REASONING and self._thinking:
            self._reasoning(event, out)
            return out
        if kind not in era.events or kind not in _CURRENT_EVENTS:
            self.notes.drop(_family(kind), kind in NEWEST.events and kind in _CURRENT_EVENTS)
            return out
        handler = _HANDLERS.get(kind)
        if handler is None:
            out.append(event)
        else:
            handler(self, event, out)
        return out

    # the events that change shape
    def _text_start(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        role = event.get("role")
        if role is None and self.era.role_required:
            event = {**event, "role": "assistant"}
        elif role is not None and role not in self.era.text_roles:
            self._dropped_text.add(event.get("messageId", ""))
            self.notes.drop(f"{role} text messages", role in NEWEST.text_roles)
            return
        out.append(event)

    def _text_content(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        if event.get("messageId") in self._dropped_text:
            return
        if event.get("delta") == "" and not self.era.empty_delta:
            self.notes.drop("empty deltas", NEWEST.empty_delta)
            return
        out.append(event)

    def _text_end(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        if event.get("messageId") in self._dropped_text:
            self._dropped_text.discard(event.get("messageId", ""))
            return
        out.append(event)

    def _text_chunk(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        message = event.get("messageId")
        if self._dropping_chunks is not None and message in (None, self._dropping_chunks):
            return
        self._dropping_chunks = None
        role = event.get("role")
        if role is not None and role not in self.era.text_roles:
            self._dropping_chunks = message or ""
            self.notes.drop(f"{role} text messages", role in NEWEST.text_roles)
            return
        out.append(event)

    def _tool_result(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        content = event.get("content")
        if isinstance(content, list):
            dropped: list[Any] = []
            event = {**event, "content": _text_of(content, dropped)}
            self.notes.translated["TOOL_CALL_RESULT content parts to text"] += 1
            for part in dropped:  # every era flattens them, NEWEST too
                self.notes.drop(f"{_part_kind(part)} content parts", False)
        out.append(event)

    def _snapshot(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        messages = event.get("messages")
        if isinstance(messages, list):
            event = {**event, "messages": _messages_for(self.era, messages, self.notes)}
        out.append(event)

    def _run_started(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        run_input = event.get("input")
        if self.era.run_input and isinstance(run_input, dict):
            fixed = {**run_input}
            fixed.setdefault("tools", [])
            fixed.setdefault("context", [])
            if isinstance(fixed.get("messages"), list):
                fixed["messages"] = _messages_for(self.era, fixed["messages"], self.notes)
            resume = fixed.get("resume")
            if isinstance(resume, list):  # a closed enum of statuses, where an era has resume
                kept = [
                    r for r in resume if not isinstance(r, dict) or r.get("status") in _STATUSES
                ]
                for _ in range(len(resume) - len(kept)):
                    self.notes.drop("resume entries of an extension's status", False)
                fixed["resume"] = kept
            event = {**event, "input": fixed}
        out.append(event)

    def _run_finished(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        outcome = event.get("outcome")
        outcomes = self.era.outcomes
        if outcomes is not None and isinstance(outcome, dict):
            kind = outcome.get("type")
            if kind not in outcomes:
                event = {k: v for k, v in event.items() if k != "outcome"}
                self.notes.drop(
                    f"the {kind} outcome", NEWEST.outcomes is not None and kind in NEWEST.outcomes
                )
            elif kind == "success" and len(outcome) > 1:
                event = {**event, "outcome": {"type": "success"}}
                # every era that knows outcomes takes a bare success only, NEWEST too (closed
                # objects: pendingToolCallIds, or a member an extension adds)
                for member in sorted(set(outcome) - {"type"}):
                    self.notes.drop(member, False)
            elif kind == "interrupt" and set(outcome) - {"type", "interrupts"}:
                event = {**event, "outcome": {k: outcome[k] for k in ("type", "interrupts")}}
                for member in sorted(set(outcome) - {"type", "interrupts"}):
                    self.notes.drop(f"the interrupt outcome's {member}", False)
        self._close_span(out)
        out.append(event)

    def _run_error(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        self._close_span(out)
        out.append(event)

    def _encrypted_value(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        subtype = event.get("subtype")
        if subtype not in _ENCRYPTED_SUBTYPES:  # an extension's subtype: a closed union
            self.notes.drop(f"REASONING_ENCRYPTED_VALUE events of subtype {subtype}", False)
            return
        out.append(event)

    def _subagent_finished(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        outcome = event.get("outcome")
        if isinstance(outcome, dict):
            kind = outcome.get("type")
            members = _SUBAGENT_OUTCOMES.get(kind) if isinstance(kind, str) else None
            if members is None:  # the outcome is optional: absent reads as success
                event = {k: v for k, v in event.items() if k != "outcome"}
                self.notes.drop(f"the subagent {kind} outcome", False)
            elif set(outcome) - members:
                event = {**event, "outcome": {k: v for k, v in outcome.items() if k in members}}
                for member in sorted(set(outcome) - members):
                    self.notes.drop(f"the subagent outcome's {member}", False)
        out.append(event)

    def _reasoning_content(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        if event.get("delta") == "" and not self.era.empty_delta:
            self.notes.drop("empty deltas", NEWEST.empty_delta)
            return
        out.append(event)

    # REASONING_* as THINKING_*
    def _reasoning(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        kind = event["type"]
        if kind == "REASONING_ENCRYPTED_VALUE":
            self.notes.drop("REASONING_ENCRYPTED_VALUE events", kind in NEWEST.events)
            return
        self.notes.translated["REASONING_* events to THINKING_*"] += 1
        if kind == "REASONING_START":
            self._close_span(out)
            out.append(_thinking("THINKING_START", event))
            self._span, self._own_span = True, False
        elif kind == "REASONING_END":
            self._close_message(out)
            if self._span:
                out.append(_thinking("THINKING_END", event))
            self._span = self._own_span = False
        elif kind == "REASONING_MESSAGE_START":
            self._close_message(out)
            self._open_message(event, out)
        elif kind == "REASONING_MESSAGE_CONTENT":
            self._content(event, out)
        elif kind == "REASONING_MESSAGE_END":
            if self._message is not None:
                self._close_message(out, event)
        elif kind == "REASONING_MESSAGE_CHUNK":
            message = event.get("messageId")
            if message is not None and (not self._chunked or message != self._message):
                self._close_message(out)
                self._open_message(event, out)
                self._chunked = True
            if self._message is None:
                self.notes.drop(
                    "REASONING_MESSAGE_CHUNK events without a messageId", kind in NEWEST.events
                )
                return
            if "delta" in event:
                self._content(event, out)

    def _open_message(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        if not self._span:
            out.append(_thinking("THINKING_START", event))
            self._span = self._own_span = True
        out.append(_thinking("THINKING_TEXT_MESSAGE_START", event))
        self._message = event.get("messageId", "")

    def _content(self, event: dict[str, Any], out: list[dict[str, Any]]) -> None:
        delta = event.get("delta")
        if delta == "" and not self.era.empty_delta:
            self.notes.drop("empty deltas", NEWEST.empty_delta)
            return
        out.append({**_thinking("THINKING_TEXT_MESSAGE_CONTENT", event), "delta": delta})

    def _close_message(
        self, out: list[dict[str, Any]], event: dict[str, Any] | None = None
    ) -> None:
        if self._message is None:
            return
        out.append(_thinking("THINKING_TEXT_MESSAGE_END", event or {}))
        self._message, self._chunked = None, False
        if self._own_span:
            out.append({"type": "THINKING_END"})
            self._span = self._own_span = False

    def _close_span(self, out: list[dict[str, Any]]) -> None:
        self._close_message(out)
        if self._span:
            out.append({"type": "THINKING_END"})
            self._span = self._own_span = False


def _family(kind: Any) -> str:
    """How a dropped event is named in the notes: its family (REASONING_*, ...) or its type."""
    for family in (_REASONING, _ACTIVITY, _SUBAGENT):
        if kind in family:
            return f"{str(kind).split('_', 1)[0]}_* events"
    return f"{kind} events"


def _thinking(kind: str, event: dict[str, Any]) -> dict[str, Any]:
    """A THINKING_* event standing for `event` (only its timestamp carries over: the THINKING
    events name no message)."""
    out: dict[str, Any] = {"type": kind}
    if "timestamp" in event:
        out["timestamp"] = event["timestamp"]
    return out


_HANDLERS: dict[str, Callable[[Downgrade, dict[str, Any], list[dict[str, Any]]], None]] = {
    "TEXT_MESSAGE_START": Downgrade._text_start,
    "TEXT_MESSAGE_CONTENT": Downgrade._text_content,
    "TEXT_MESSAGE_END": Downgrade._text_end,
    "TEXT_MESSAGE_CHUNK": Downgrade._text_chunk,
    "TOOL_CALL_RESULT": Downgrade._tool_result,
    "MESSAGES_SNAPSHOT": Downgrade._snapshot,
    "RUN_STARTED": Downgrade._run_started,
    "RUN_FINISHED": Downgrade._run_finished,
    "RUN_ERROR": Downgrade._run_error,
    "REASONING_MESSAGE_CONTENT": Downgrade._reasoning_content,
    "REASONING_ENCRYPTED_VALUE": Downgrade._encrypted_value,
    "SUBAGENT_FINISHED": Downgrade._subagent_finished,
}


# ── an era -> 1.0 ───────────────────────────────────────────────────────────────────────────────


def _mime_kind(mime: str) -> str:
    for kind in ("image", "audio", "video"):
        if mime.startswith(kind + "/"):
            return kind
    return "document"


def _upgrade_part(part: dict[str, Any], warn: Callable[[str], None]) -> dict[str, Any]:
    """A legacy binary part as the 1.0 media part (the official 1.0 client's conversion: the
    mimeType's prefix picks image/audio/video, else document; data before url; the filename goes
    to metadata). A part with only an id cannot be converted and is left as it is."""
    mime = part["mimeType"]
    kind = _mime_kind(mime)
    for field in ("data", "url"):
        value = part.get(field)
        if value:
            upgraded: dict[str, Any] = {
                "type": kind,
                "source": {"type": field, "value": value, "mimeType": mime},
            }
            if part.get("filename"):
                upgraded["metadata"] = {"filename": part["filename"]}
            return upgraded
    warn(
        f"A binary content part carries only an id ({part.get('id', '')!r}) and cannot be "
        "converted to a 1.0 media part."
    )
    return part


def _is_binary(part: Any) -> bool:
    return (
        isinstance(part, dict)
        and part.get("type") == "binary"
        and isinstance(part.get("mimeType"), str)
    )


def _mirrors(part: Any, upgraded: dict[str, Any]) -> bool:
    """`part` is a 1.0 media part holding the same thing as `upgraded` (filename included)."""
    if not isinstance(part, dict) or part.get("type") != upgraded["type"]:
        return False
    if part.get("source") != upgraded["source"]:
        return False
    wanted = upgraded.get("metadata", {}).get("filename")
    metadata = part.get("metadata")
    return not wanted or (isinstance(metadata, dict) and metadata.get("filename") == wanted)


def _has_binary(messages: Any) -> bool:
    """Some message of `messages` holds a legacy binary content part."""
    return isinstance(messages, list) and any(
        isinstance(m, dict)
        and isinstance(m.get("content"), list)
        and any(_is_binary(p) for p in m["content"])
        for m in messages
    )


def _upgrade_messages(messages: Any, warn: Callable[[str], None]) -> bool:
    """Upgrade the binary parts of `messages` in place; True when one was found."""
    found = False
    if not isinstance(messages, list):
        return found
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list) or not any(_is_binary(p) for p in content):
            continue
        found = True
        upgraded = []
        for part in content:
            if _is_binary(part):
                new = _upgrade_part(part, warn)
                # a client that sends both forms of one attachment: keep the 1.0 one
                if new is not part and any(_mirrors(other, new) for other in content):
                    continue
                upgraded.append(new)
            else:
                upgraded.append(part)
        message["content"] = upgraded
    return found


def upgrade_input(value: Any) -> list[str]:
    """Upgrade, in place, the retired shapes in a RunAgentInput's JSON object that a pre-1.0
    client sends: `{"type": "binary", ...}` content parts become image/audio/video/document parts
    with a data or url source. Returns the warnings (empty: nothing was retired)."""
    said: list[str] = []
    if isinstance(value, dict) and _upgrade_messages(value.get("messages"), said.append):
        said.insert(0, "Converted deprecated binary input content to the 1.0 media content parts.")
    return said


def needs_upgrade(data: bytes | str) -> bool:
    """Whether a JSON text may hold a retired shape (a cheap test, before parsing)."""
    if isinstance(data, str):
        return "THINKING_" in data or '"binary"' in data
    return b"THINKING_" in data or b'"binary"' in data


class LegacyReader:
    """A pre-1.0 producer's events upgraded to 1.0, as the official 1.0 client upgrades them:
    THINKING_* become REASONING_* (ids minted, as that client mints them), binary content parts
    in MESSAGES_SNAPSHOT and RUN_STARTED.input become media parts. One per stream."""

    def __init__(self) -> None:
        self._span: str | None = None
        self._message: str | None = None

    def upgrade(self, event: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """The event upgraded (a new object when it changed) and the warnings."""
        kind = event.get("type")
        said: list[str] = []
        if isinstance(kind, str) and kind in _THINKING:
            return self._thinking(kind, event, said), said
        if kind == "MESSAGES_SNAPSHOT" and _has_binary(event.get("messages")):
            event = _copy(event)
            _upgrade_messages(event.get("messages"), said.append)
            said.insert(0, _converted("binary input content", "the 1.0 media content parts"))
        elif kind == "RUN_STARTED":
            run_input = event.get("input")
            if isinstance(run_input, dict) and _has_binary(run_input.get("messages")):
                event = _copy(event)
                _upgrade_messages(event["input"].get("messages"), said.append)
                said.insert(0, _converted("binary input content", "the 1.0 media content parts"))
        return event, said

    def _thinking(self, kind: str, event: dict[str, Any], said: list[str]) -> dict[str, Any]:
        rest = {k: v for k, v in event.items() if k != "type"}
        if kind == "THINKING_START":
            self._span = str(uuid.uuid4())
            replacement = "REASONING_START"
            title = rest.pop("title", None)
            said.append(_converted(kind, replacement))
            if title is not None:
                said.append(
                    f"Dropping THINKING_START.title {orjson.dumps(title).decode()}: "
                    "REASONING_START has no title."
                )
            return {"type": replacement, **rest, "messageId": self._span}
        if kind == "THINKING_TEXT_MESSAGE_START":
            self._message = str(uuid.uuid4())
            said.append(_converted(kind, "REASONING_MESSAGE_START"))
            return {
                "type": "REASONING_MESSAGE_START",
                **rest,
                "messageId": self._message,
                "role": "reasoning",
            }
        if kind == "THINKING_TEXT_MESSAGE_CONTENT":
            said.append(_converted(kind, "REASONING_MESSAGE_CONTENT"))
            message = self._minted(kind, self._message, said)
            self._message = message
            return {"type": "REASONING_MESSAGE_CONTENT", **rest, "messageId": message}
        if kind == "THINKING_TEXT_MESSAGE_END":
            said.append(_converted(kind, "REASONING_MESSAGE_END"))
            message = self._minted(kind, self._message, said)
            self._message = None
            return {"type": "REASONING_MESSAGE_END", **rest, "messageId": message}
        said.append(_converted(kind, "REASONING_END"))
        span = self._minted(kind, self._span, said)
        self._span = None
        return {"type": "REASONING_END", **rest, "messageId": span}

    @staticmethod
    def _minted(kind: str, established: str | None, said: list[str]) -> str:
        if established is not None:
            return established
        minted = str(uuid.uuid4())
        said.append(
            f"Minting a messageId ({minted!r}) for {kind}: no THINKING opener preceded it, so "
            "there was no id to continue."
        )
        return minted


def _copy(event: dict[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = orjson.loads(orjson.dumps(event))
    return copied


def _converted(what: str, replacement: str) -> str:
    return f"Converting deprecated {what} to {replacement}."
