"""`agui validate`: check JSON documents against a definition of the spec.

What a FILE (or standard input: no FILE, or `-`) holds is recognised by its content, from its
first line that is not blank:

* JSON Lines, one document per line: a first line that is a JSON document on its own (a file
  named `.jsonl` is JSON Lines whatever it holds; standard input is JSON Lines unless it is one
  of the others);
* a JSON array: each item is a document (as `agui replay` reads a recording);
* an SSE capture (`data:`, `id:`, `event:`, `retry:` or a `:` comment first): the data of each
  frame is a document (what `agui replay` reads, `curl -N` shows);
* otherwise one document, the whole file (a pretty-printed one, say).

Each result line names where its document is: `file` (`-` for standard input) and `line` (the
line it starts on, counted from 1; for an array's item, the array's line, with `item`, its number
from 1).
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

import attrs
import orjson
from agui_generated import DecodeError, Problem
from agui_generated.codec import DEFINITIONS

from agui.errors import EncodeError, SSEError
from agui.wire.codec import decode, encode

__all__ = ["MAX_DOCUMENT_BYTES", "validate"]

MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
"""The largest document validate reads; a bigger one is reported, not parsed."""

STDIN = "-"
"""How standard input is named, as a FILE and in the results."""

_BOM = b"\xef\xbb\xbf"
_SSE_FIELD = re.compile(rb"(?::|(?:data|event|id|retry)(?::|\r?\n?\Z))")
"""A line that starts an SSE capture: a comment, or a field the SSE standard names."""


@attrs.frozen
class _Document:
    """One document and where it is."""

    data: bytes | Problem
    file: str
    line: int | None
    item: int | None = None


def _problem_json(p: Problem) -> dict[str, str]:
    return {"pointer": p.pointer, "kind": p.kind, "message": p.message}


def _documents(args: argparse.Namespace) -> Iterator[_Document]:
    for name in args.files or [STDIN]:
        if name == STDIN:
            yield from _read(sys.stdin.buffer, STDIN, "standard input", stdin=True)
            continue
        try:
            with open(name, "rb") as fh:
                if name.endswith(".jsonl"):
                    yield from _lines(fh, name, name)
                else:
                    yield from _read(fh, name, name, stdin=False)
        except OSError as exc:
            yield _Document(
                Problem("", "io", f"cannot read {name}: {exc.strerror or exc}"), name, None
            )


def _read(stream: BinaryIO, file: str, said: str, *, stdin: bool) -> Iterator[_Document]:
    """The documents of one file or of standard input, by what its first line that is not
    blank says it holds (the module docstring)."""
    head: list[bytes] = []
    first = b""
    while not first.strip():
        line = stream.readline(MAX_DOCUMENT_BYTES + 1)
        if not line:
            yield _Document(Problem("", "json", f"no JSON document in {said}"), file, None)
            return
        if not head:
            line = line.removeprefix(_BOM)
        head.append(line)
        first = line
    start = len(head)  # the line the content starts on
    kind = first.lstrip()[:1]
    if _SSE_FIELD.match(first):
        yield from _sse(_chain(head, stream), file)
    elif kind == b"[":
        whole = b"".join(head) + _rest(stream, head)
        items = _array(whole)
        if items is not None:
            for number, item in enumerate(items, 1):
                yield _Document(orjson.dumps(item), file, start, number)
        elif _alone(first):
            yield from _lines(_Replayed(head, stream), file, said)
        else:
            yield _Document(_bounded(whole), file, start)
    elif _alone(first) or (stdin and kind != b"{"):
        yield from _lines(_Replayed(head, stream), file, said)
    else:
        whole = b"".join(head) + _rest(stream, head)
        yield _Document(_bounded(whole), file, start)


def _rest(stream: BinaryIO, head: list[bytes]) -> bytes:
    """What follows the lines read already, up to one byte over the limit of a document."""
    return stream.read(max(0, MAX_DOCUMENT_BYTES + 1 - sum(map(len, head))))


def _alone(line: bytes) -> bool:
    """Whether `line` is a JSON document on its own (or too large to tell: a line of JSON
    Lines, reported as too large)."""
    if len(line) > MAX_DOCUMENT_BYTES:
        return line.lstrip()[:1] in (b"{", b"[")
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return False
    return True


def _array(whole: bytes) -> list[Any] | None:
    """The items of a JSON array, or None when `whole` is not one (or is too large)."""
    if len(whole) > MAX_DOCUMENT_BYTES:
        return None
    try:
        value = orjson.loads(whole)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, list) else None


def _chain(head: list[bytes], stream: BinaryIO) -> Iterator[bytes]:
    yield from head
    while line := stream.readline(MAX_DOCUMENT_BYTES + 1):
        yield line


class _Replayed:
    """A stream whose first lines were read already: readline gives them again first."""

    def __init__(self, head: list[bytes], stream: BinaryIO) -> None:
        self.head = list(head)
        self.stream = stream

    def readline(self, limit: int = -1) -> bytes:
        if self.head:
            return self.head.pop(0)
        return self.stream.readline(limit)


def _lines(stream: BinaryIO | _Replayed, file: str, said: str) -> Iterator[_Document]:
    seen = False
    number = 0
    while True:
        line = stream.readline(MAX_DOCUMENT_BYTES + 1)
        if not line:
            break
        number += 1
        if number == 1:
            line = line.removeprefix(_BOM)
        if len(line) > MAX_DOCUMENT_BYTES:
            yield _Document(_bounded(line), file, number)
            # skip the rest of the oversized line
            while line and not line.endswith(b"\n"):
                line = stream.readline(1024 * 1024)
            seen = True
            continue
        if line.strip():
            seen = True
            yield _Document(line, file, number)
    if not seen:
        yield _Document(Problem("", "json", f"no JSON document in {said}"), file, None)


def _sse(lines: Iterable[bytes], file: str) -> Iterator[_Document]:
    """The data of each frame of an SSE capture, with the line its frame starts on."""
    from agui.wire.sse import SSEDecoder

    decoder = SSEDecoder(max_frame_bytes=MAX_DOCUMENT_BYTES)
    start: int | None = None
    found = False
    try:
        for number, line in enumerate(lines, 1):
            if start is None and line.strip():
                start = number
            for message in decoder.feed(line):
                found = True
                yield _Document(message.data, file, start)
            if not line.strip(b"\r\n"):
                start = None  # a blank line ends the frame (a comment-only one dispatches none)
        for message in decoder.close():
            found = True
            yield _Document(message.data, file, start)
    except SSEError:
        said = f"an SSE frame larger than {MAX_DOCUMENT_BYTES} bytes"
        yield _Document(Problem("", "too_large", said), file, start)
        return
    if not found:
        yield _Document(Problem("", "json", f"no SSE frame with data in {file}"), file, None)


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


def unknown_definition(name: str) -> str:
    """What `--as NAME` says when NAME is no definition: the nearest names (a case slip, a typo,
    a missing `Event` suffix), then every valid one."""
    names = sorted(DEFINITIONS)
    folded = {n.lower(): n for n in names}
    near = [folded[name.lower()]] if name.lower() in folded else []
    near += [n for n in names if n.lower() in (f"{name}event".lower(), f"{name}message".lower())]
    near += difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    near = list(dict.fromkeys(near))
    hint = f" (did you mean {' or '.join(near)}?)" if near else ""
    return f"unknown definition {name!r}{hint}; the definitions are: {', '.join(names)}"


def validate(args: argparse.Namespace) -> int:
    cls = DEFINITIONS.get(args.definition)
    if cls is None:
        print(f"agui validate: {unknown_definition(args.definition)}", file=sys.stderr)
        return 2
    failed = False
    out = sys.stdout.buffer
    for doc in _documents(args):
        where: dict[str, Any] = {"file": doc.file, "line": doc.line}
        if doc.item is not None:
            where["item"] = doc.item
        result = where | _validate(doc.data, cls, args.strict)
        failed |= not result["ok"]
        out.write(orjson.dumps(result) + b"\n")
        out.flush()
    return 1 if failed else 0
