"""Client-side stream processing: what turns a stream of events into a conversation.

Order (the official TypeScript client's): tolerant decoding with strip-and-warn -> chunk expansion
-> verification -> the reducer. Each stage is a small class with `feed(event) -> list` and
`finish() -> list`, so any source can drive them (the HTTP client, a list, a recorded file).

Warnings are data: every stage reports what it stripped, dropped or could not apply as a
StreamWarning (collected, and logged on the "agui.stream" logger). A rule the client enforces that
the stream breaks raises ProtocolError; a producer's RUN_ERROR is an event, not an exception.
"""

from __future__ import annotations

import logging

import attrs

__all__ = ["ProtocolError", "StreamWarning"]

log = logging.getLogger("agui.stream")


@attrs.frozen
class StreamWarning:
    """Something the client removed, dropped or could not apply, and why."""

    kind: str
    """What happened: stripped, dropped_event, patch_failed, version, activity, ..."""
    message: str
    """A plain sentence."""
    pointer: str = ""
    """Where inside the event, as a JSON pointer in wire names, when that applies."""
    event: int | None = None
    """The index of the event in the stream (0-based, as received), when known."""


class ProtocolError(Exception):
    """The stream broke a rule the client enforces; the run is rejected."""

    def __init__(self, message: str, *, event: int | None = None) -> None:
        self.event = event
        super().__init__(message)
