"""StreamWarning: what a stage of the client pipeline removed, dropped or could not apply."""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["StreamWarning", "warning_json"]


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
    """The number of the event in the stream (counted from 1, as received), when known."""


def warning_json(warning: StreamWarning) -> dict[str, Any]:
    """A warning as a JSON object: kind, message, pointer, event."""
    return {
        "kind": warning.kind,
        "message": warning.message,
        "pointer": warning.pointer,
        "event": warning.event,
    }
