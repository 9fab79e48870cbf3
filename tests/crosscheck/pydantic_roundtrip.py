"""Peer for the cross-SDK check: the official Python SDK (ag-ui-protocol 1.0.0, pydantic).

The crosscheck's peer protocol (tests/crosscheck/peers.py, docs/cross-sdk.md):
stdin:  JSON Lines of {"definition": <spec definition name>, "document": <JSON>, "text": <its text>}
stdout: one line per input, in order: {"ok": true, "wire_text": <text>} or {"ok": false, "error": <text>}

Each document is validated with ``TypeAdapter(<model or union>).validate_json`` (events
through the ``Event`` union, as a consumer of a stream does) and written back the way a
Python producer writes it: events through ``ag_ui.encoder.EventEncoder`` (which calls
``model_dump_json(by_alias=True)``), anything else with ``dump_json(by_alias=True)``. The
1.0.0 base model already leaves out optional fields that hold None.

``--exclude-none`` instead dumps everything with ``by_alias=True, exclude_none=True``, the
call many integrations still make; unlike the base model's own omission it also removes
required nulls and nulls inside open objects.
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import cache
from typing import Any

from ag_ui import core
from ag_ui._generated import models
from ag_ui.encoder import EventEncoder
from pydantic import TypeAdapter, ValidationError

_SSE_PREFIX = "data: "
_SSE_SUFFIX = "\n\n"


@cache
def _adapter(target: Any) -> TypeAdapter[Any]:
    return TypeAdapter(target)


def _describe(err: ValidationError) -> str:
    parts = []
    for issue in err.errors(include_url=False):
        where = ".".join(str(p) for p in issue["loc"]) or "<root>"
        parts.append(f"{where}: {issue['msg']}")
    return "; ".join(parts)


def roundtrip(definition: str, text: str, *, exclude_none: bool) -> dict[str, Any]:
    own = getattr(models, definition, None) or getattr(core, definition, None)
    if own is None:
        return {"ok": False, "error": f"unsupported: ag_ui has no {definition}"}
    is_event = definition == "Event" or (
        isinstance(own, type) and issubclass(own, models.BaseEvent)
    )
    target = models.Event if is_event else own
    try:
        value = _adapter(target).validate_json(text)
    except ValidationError as err:
        return {"ok": False, "error": _describe(err)}
    if is_event and definition != "Event" and type(value) is not own:
        return {"ok": False, "error": f"parsed as {type(value).__name__}, not as {definition}"}
    if exclude_none:
        wire = _adapter(target).dump_json(value, by_alias=True, exclude_none=True).decode()
    elif is_event:
        frame = EventEncoder().encode(value)
        wire = frame.removeprefix(_SSE_PREFIX).removesuffix(_SSE_SUFFIX)
    else:
        wire = _adapter(target).dump_json(value, by_alias=True).decode()
    return {"ok": True, "wire_text": wire}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exclude-none", action="store_true")
    args = parser.parse_args()
    out = []
    for line in sys.stdin.buffer.read().decode("utf-8", "surrogateescape").split("\n"):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            result = roundtrip(item["definition"], item["text"], exclude_none=args.exclude_none)
        except Exception as err:  # a crash is a finding about this document, not the run
            result = {"ok": False, "error": f"crashed: {type(err).__name__}: {err}"}
        out.append(json.dumps(result) + "\n")
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    main()
