"""The verdict of each Python binding on each ECMA-262 case (tests/test_ecma_patterns.py).

Run with PYTHONPATH putting a scratch spec's generated packages first; reads the cases as JSON
([[member, value], ...]) on stdin and writes {"verdicts": {binding: [verdict, ...]}, "pydantic
patterns": {member: pattern}} as JSON on stdout, a verdict being true (accepted) or false
(refused), and the patterns those of pydantic's `model_json_schema()`. Bindings: the attrs codec decoding a document and
encoding a model, the pydantic binding, and the generated JSON Schema under python-jsonschema with
the project's ECMA-262 `pattern` keyword (codegen.regex.jsonschema_pattern).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import agui_generated
import agui_pydantic.models
import orjson
import referencing
from agui_generated.models import PatternProbe
from referencing.jsonschema import DRAFT202012

import agui
from codegen.regex import spec_validator

OUT = Path(agui_generated.__file__).resolve().parent.parent
SCHEMA = json.loads((OUT / "jsonschema" / "agui.schema.json").read_text("utf-8"))
VALIDATOR = spec_validator(
    {"$ref": f"{SCHEMA['$id']}#PatternProbe"},
    referencing.Registry().with_resource(SCHEMA["$id"], DRAFT202012.create_resource(SCHEMA)),
)


def attempt(run: Any, argument: Any) -> bool:
    try:
        run(argument)
    except Exception:
        return False
    return True


def decode(raw: bytes) -> Any:
    return agui.decode(raw, PatternProbe, strict=True)


def encode(document: dict[str, str]) -> bytes:
    return agui.encode(PatternProbe(**document))


def main() -> None:
    cases: list[tuple[str, str]] = json.load(sys.stdin)
    out: dict[str, list[bool]] = {
        "attrs decode": [],
        "attrs encode": [],
        "pydantic": [],
        "jsonschema": [],
    }
    for member, value in cases:
        document = {member: value}
        out["attrs decode"].append(attempt(decode, orjson.dumps(document)))
        out["attrs encode"].append(attempt(encode, document))
        out["pydantic"].append(attempt(agui_pydantic.models.PatternProbe.model_validate, document))
        out["jsonschema"].append(VALIDATOR.is_valid(document))
    schema = agui_pydantic.models.PatternProbe.model_json_schema()
    pointer = schema["$defs"]["JsonPointer"] if "$defs" in schema else {}
    patterns = {
        name: member.get("pattern", pointer.get("pattern"))
        for name, member in schema["properties"].items()
    }
    json.dump({"verdicts": out, "pydantic patterns": patterns}, sys.stdout)


if __name__ == "__main__":
    main()
