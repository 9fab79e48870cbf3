"""The client-side processing pipeline: decode -> chunk expansion -> verification -> reducer.

Feed it whatever a source yields: JSON text or bytes of one event, an already parsed JSON object,
or a decoded model. Text and objects are decoded tolerantly (unknown members and union members are
stripped, each with a warning); an event of an unknown type is dropped with a warning, as the
TypeScript client does. Before that, on the JSON, the shapes of pre-1.0 producers are upgraded as
the official 1.0 client upgrades them (agui.wire.eras.LegacyReader: THINKING_* events become
REASONING_* events, legacy binary content parts become media parts), each with a warning of kind
"legacy"; a strict pipeline takes the contract only, and upgrades nothing. Every stage's warnings end up in one list, `warnings`, in stream order and
numbered by the event as received (the first item fed is event 1, as the first frame of a stream
is frame 1; agui.errors has the numbering).

A rule the stream breaks raises (ProtocolError, or StreamError for a frame that is not a valid
event, as HttpAgent.run raises it); the run that was open is then recorded as truncated. A
producer's RUN_ERROR is an event. The error's `event` (and `frame`) is the number of the item as
received, whichever stage found the fault.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, runtime_checkable

import attrs
import orjson
from agui_generated import (
    DecodeError,
    Problem,
    ReasoningMessageContentEvent,
    TextMessageContentEvent,
    ToolCallArgsEvent,
    UnknownEvent,
)

from agui.errors import AguiError, ProtocolError, StreamError
from agui.stream.chunks import ChunkExpander
from agui.stream.reducer import TRUNCATED, Reducer
from agui.stream.verify import Verifier
from agui.stream.warning import StreamWarning
from agui.wire.codec import decode_event_bytes, decode_frame
from agui.wire.eras import LegacyReader, needs_upgrade

__all__ = ["NO_EVENTS", "Pipeline", "StrictSource", "describe"]

log = logging.getLogger("agui.stream")

NO_EVENTS = "The stream ended without any event: no run was reported."

_STREAMED: frozenset[type] = frozenset(
    (TextMessageContentEvent, ToolCallArgsEvent, ReasoningMessageContentEvent)
)
"""The bulk of a run: the deltas of a message, a tool call's arguments, a reasoning message."""


class Stage(Protocol):
    """A pipeline stage between decoding and the reducer: it turns each event into the events to
    pass on, may end the stream with more, and keeps what it warns about in `warnings`."""

    warnings: list[StreamWarning]

    def feed(self, event: Any, /) -> list[Any]: ...

    def finish(self) -> list[Any]: ...


@runtime_checkable
class StrictSource(Protocol):
    """A source that says how its frames are to be decoded: `strict` True is exactly the contract
    (an unknown member or event type is an error), False is tolerant (stripped, with a warning).
    agui.HttpAgent is one (`HttpAgent(url, strict=True)`); Conversation.run decodes the frames of
    such a source the way it says."""

    @property
    def strict(self) -> bool: ...


def describe(exc: BaseException) -> str:
    """The one-line account of a client-side failure that summaries and run results carry: the
    package's own errors say what is wrong; anything else is named with its type and message (a
    transport error, or a bug), never as a bare class name."""
    if isinstance(exc, DecodeError):
        return f"Not a valid AG-UI event: {'; '.join(str(p) for p in exc.problems[:5])}"
    if isinstance(exc, AguiError) and str(exc):
        return str(exc)
    detail = str(exc) or "no details given"
    return f"{type(exc).__name__} while consuming the stream: {detail}"


class Pipeline:
    """decode -> ChunkExpander -> Verifier -> Reducer, for one stream.

    feed(item) processes one received item and returns the events delivered (after expansion and
    verification, as applied); finish() ends the stream. A stream carrying several runs is fine.
    Make a new Pipeline per stream; the reducer (and so the conversation) may be shared.
    """

    def __init__(
        self,
        reducer: Reducer | None = None,
        *,
        strict: bool = False,
        stages: Iterable[Stage] | None = None,
        on_event: Callable[[Any], object] | None = None,
    ) -> None:
        self.reducer = reducer if reducer is not None else Reducer()
        self.strict = strict
        """Decode text and objects strictly: unknown members are errors instead of warnings."""
        # With the default stages, a delta of a stream that is open (the bulk of a run) goes
        # straight to the reducer when both stages say they would only pass it on.
        self._quick: tuple[ChunkExpander, Verifier] | None = None
        if stages is None:
            stages = self._quick = (ChunkExpander(), Verifier())
        self.stages: list[Stage] = list(stages)
        """The stages between decoding and the reducer (default: a new ChunkExpander and
        Verifier)."""
        if inspect.iscoroutinefunction(on_event) or inspect.iscoroutinefunction(
            getattr(on_event, "__call__", None)  # noqa: B004 - a callable object's method
        ):
            raise TypeError(
                "Pipeline cannot await on_event, an async function: pass a plain function (an "
                "async one goes to Conversation.run, stream, follow or connect)"
            )
        self.on_event = on_event
        """Called with every event as it is applied (also those before a rejection), in order:
        to watch a stream live, or to keep its events. Nothing is kept otherwise. A plain
        function: the pipeline is synchronous (an async function is refused, TypeError)."""
        self.received = 0
        """How many items were fed."""
        self._drained = [0] * len(self.stages)
        self._problems: list[Problem] = []  # what decoding a frame found (empty but for a few)
        self._legacy = LegacyReader()

    @property
    def warnings(self) -> list[StreamWarning]:
        """Every warning of the stream so far (shared with the reducer)."""
        return self.reducer.warnings

    def feed(self, item: Any) -> list[Any]:
        """Process one received item; returns the events delivered for it."""
        self.received += 1
        at = self.received
        try:
            event = self._decode(item, at)
        except StreamError as exc:
            self.reducer.abort(describe(exc))
            raise
        return [] if event is None else self._through([event], at, finishing=False)

    def steps(self, item: Any) -> Iterator[Any]:
        """`feed`, one event at a time: each event delivered for the item is applied (and
        `on_event` called) just before it is yielded, and the item's next event waits until the
        next is asked for, so a consumer that reads the reducer at each event sees it as of that
        event. Raises as `feed` does; a consumer that stops early leaves the item's remaining
        events unapplied (the stream is then to be aborted). The item is decoded, and a delta of
        an open stream (the bulk of a run, one event) applied, when `steps` is called."""
        self.received += 1
        at = self.received
        try:
            event = self._decode(item, at)
        except StreamError as exc:
            self.reducer.abort(describe(exc))
            raise
        if event is None:
            return iter(())
        quick = self._quick
        if (
            quick is not None
            and type(event) in _STREAMED
            and quick[0].passes(event)
            and quick[1].admits(event)
        ):
            self.reducer.feed(event, at=at)
            if self.on_event is not None:
                self.on_event(event)
            return iter((event,))
        return self._steps(event, at)

    def _steps(self, event: Any, at: int) -> Iterator[Any]:
        try:
            yield from self._walk(event, 0, at)
        except ProtocolError as exc:
            self._rejected(exc, at)
            raise

    def finish(self) -> list[Any]:
        """End of stream. Raises ProtocolError when it ends inside a run (the run is recorded as
        truncated) or carried no event at all."""
        at = self.received or None
        delivered = self._through([], at, finishing=True)
        if self.reducer.run_open:
            self.reducer.abort(TRUNCATED)
            raise ProtocolError(TRUNCATED)
        self.reducer.finish()
        if self.received == 0:
            raise ProtocolError(NO_EVENTS)
        return delivered

    def abort(self, reason: str) -> None:
        """The stream stopped for `reason` (a rejection): record the open run as truncated."""
        self.reducer.abort(reason)

    def run(self, items: Iterable[Any]) -> list[Any]:
        """Feed every item, then finish; returns every delivered event."""
        delivered: list[Any] = []
        for item in items:
            delivered += self.feed(item)
        delivered += self.finish()
        return delivered

    # ── stages ───────────────────────────────────────────────────────────────────────────────

    def _decode(self, item: Any, at: int) -> Any:
        if type(item) is bytes and (self.strict or not needs_upgrade(item)):
            # A frame's JSON with nothing to upgrade (nearly every item of a stream).
            problems = self._problems
            event = decode_event_bytes(item, at, self.strict, problems)
            if not problems and not isinstance(event, UnknownEvent):
                return event
            self._problems = []
            return self._reported(event, problems, at)
        problems = []
        if not self.strict:
            item = self._upgrade(item, at)
        if isinstance(item, bytes | bytearray | memoryview | str | dict):
            event = decode_frame(item, at, strict=self.strict, warnings=problems)
        else:
            event = item
        return self._reported(event, problems, at)

    def _reported(self, event: Any, problems: list[Problem], at: int) -> Any:
        """A decoded item's warnings reported: None for an event of an unknown type (dropped)."""
        if isinstance(event, UnknownEvent):
            self._warn(
                StreamWarning(
                    "dropped_event",
                    f"Dropping unrecognised event '{event.type}': the protocol does not describe it.",
                    "/type",
                    at,
                )
            )
            return None
        for problem in problems:
            self._warn(StreamWarning("stripped", problem.message, problem.pointer, at))
        return event

    def _upgrade(self, item: Any, at: int) -> Any:
        """A pre-1.0 producer's shapes upgraded (the JSON object that replaces `item`, with a
        warning for each change), or `item` as it is. Text is parsed only when it may hold one."""
        if isinstance(item, UnknownEvent):
            value: Any = item.raw  # a decoded source: a retired event came through as unknown
        elif isinstance(item, dict):
            value = item
        elif isinstance(item, bytes | bytearray | memoryview | str):
            text = item if isinstance(item, str) else bytes(item)
            if not needs_upgrade(text):
                return item
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError:
                return item  # decoding reports it
        else:
            return item
        if not isinstance(value, dict):
            return item
        upgraded, said = self._legacy.upgrade(value)
        if not said:
            return item
        for message in said:
            self._warn(StreamWarning("legacy", message, "", at))
        return upgraded

    def _through(self, events: list[Any], at: int | None, *, finishing: bool) -> list[Any]:
        out: list[Any] = []
        try:
            for event in events:
                self._push(event, 0, at, out)
            if finishing:
                for number, stage in enumerate(self.stages):
                    produced = stage.finish()
                    self._drain(number, at)
                    for event in produced:
                        self._push(event, number + 1, at, out)
        except ProtocolError as exc:
            self._rejected(exc, at)
            raise
        return out

    def _rejected(self, exc: ProtocolError, at: int | None) -> None:
        """A stage rejected the stream: name the item, keep every stage's warnings, record the
        open run as truncated."""
        if exc.event is not None and at is not None:
            exc.event = exc.frame = at  # a stage counts what it was fed; name the item
        for number in range(len(self.stages)):
            self._drain(number, at)
        self.reducer.abort(describe(exc))

    def _walk(self, event: Any, number: int, at: int) -> Iterator[Any]:
        """`_push` as a generator: each event is yielded right after it is applied."""
        if number == len(self.stages):
            self.reducer.feed(event, at=at)
            if self.on_event is not None:
                self.on_event(event)
            yield event
            return
        produced = self.stages[number].feed(event)
        self._drain(number, at)
        for item in produced:
            yield from self._walk(item, number + 1, at)

    def _push(self, event: Any, number: int, at: int | None, out: list[Any]) -> None:
        """Pass one event through stage `number` and those after it, depth first, so everything
        a stage emits before a rejected event is applied, as in the TypeScript client."""
        if number == len(self.stages):
            self.reducer.feed(event, at=at)
            if self.on_event is not None:
                self.on_event(event)
            out.append(event)
            return
        produced = self.stages[number].feed(event)
        self._drain(number, at)
        for item in produced:
            self._push(item, number + 1, at, out)

    def _drain(self, number: int, at: int | None) -> None:
        """Move a stage's new warnings into the stream's list, numbered as received."""
        found = self.stages[number].warnings
        for warning in found[self._drained[number] :]:
            self.reducer.warnings.append(attrs.evolve(warning, event=at))
        self._drained[number] = len(found)

    def _warn(self, warning: StreamWarning) -> None:
        self.reducer.warnings.append(warning)
        log.warning("event %d: %s", warning.event, warning.message)
