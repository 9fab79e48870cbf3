"""`agui validate`: check JSON documents against a definition of the spec."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson
from agui_generated import DecodeError, Problem
from agui_generated.codec import DEFINITIONS

from agui.errors import EncodeError
from agui.wire.codec import decode, encode

__all__ = ["MAX_DOCUMENT_BYTES", "validate"]

MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
"""The largest document validate reads; a bigger one is reported, not parsed."""


def _problem_json(p: Problem) -> dict[str, str]:
    return {"pointer": p.pointer, "kind": p.kind, "message": p.message}


def _documents(args: argparse.Namespace) -> Iterator[bytes | Problem]:
    if not args.files:
        yield from _lines(sys.stdin.buffer, "standard input")
        return
    for name in args.files:
        try:
            with open(name, "rb") as fh:
                if name.endswith(".jsonl"):
                    yield from _lines(fh, name)
                    continue
                data = fh.read(MAX_DOCUMENT_BYTES + 1)
        except OSError as exc:
            yield Problem("", "io", f"cannot read {name}: {exc.strerror or exc}")
            continue
        yield _bounded(data)


def _lines(stream: BinaryIO, name: str) -> Iterator[bytes | Problem]:
    seen = False
    while True:
        line = stream.readline(MAX_DOCUMENT_BYTES + 1)
        if not line:
            break
        if len(line) > MAX_DOCUMENT_BYTES:
            yield _bounded(line)
            # skip the rest of the oversized line
            while line and not line.endswith(b"\n"):
                line = stream.readline(1024 * 1024)
            seen = True
            continue
        if line.strip():
            seen = True
            yield line
    if not seen:
        yield Problem("", "json", f"no JSON document in {name}")


def _bounded(data: bytes) -> bytes | Problem:
    if len(data) > MAX_DOCUMENT_BYTES:
        return Problem("", "too_large", f"document larger than {MAX_DOCUMENT_BYTES} bytes")
    return data


def _validate(doc: bytes | Problem, cls: Any, strict: bool) -> dict[str, Any]:
    if isinstance(doc, Problem):
        return {"ok": False, "errors": [_problem_json(doc)], "warnings": []}
    warnings: list[Problem] = []
    try:
        model = decode(doc, cls, strict=strict, warnings=warnings)
        wire = orjson.Fragment(encode(model))
    except DecodeError as exc:
        errors = [_problem_json(p) for p in exc.problems]
        return {"ok": False, "errors": errors, "warnings": [_problem_json(w) for w in warnings]}
    except EncodeError as exc:
        return {
            "ok": False,
            "errors": [{"pointer": exc.pointer, "kind": "encode", "message": exc.message}],
            "warnings": [],
        }
    return {
        "ok": True,
        "errors": [],
        "warnings": [_problem_json(w) for w in warnings],
        "wire": wire,
    }


def validate(args: argparse.Namespace) -> int:
    cls = DEFINITIONS.get(args.definition)
    if cls is None:
        print(f"agui validate: unknown definition {args.definition!r}", file=sys.stderr)
        return 2
    failed = False
    out = sys.stdout.buffer
    for doc in _documents(args):
        result = _validate(doc, cls, args.strict)
        failed |= not result["ok"]
        out.write(orjson.dumps(result) + b"\n")
        out.flush()
    return 1 if failed else 0
