"""The crosscheck's peer protocol: how any SDK (TypeScript, Python, Java, .NET, Go, ...) is asked
what it makes of a document.

A peer is a command. It reads JSON Lines on stdin, one document per line:

    {"definition": "TextMessageStartEvent", "document": {...}, "text": "{...}"}

`definition` is the spec's name of what the document should be (`Event` for any event);
`document` is the document as a JSON value (absent when its text is not JSON at all: the invalid
fixtures of kind `json`); `text` is the document exactly as stored, for a peer that wants to
parse the bytes the way its SDK reads a wire (numbers as written, duplicate keys, escapes).

Request lines are ASCII (every other character escaped) and end with `\n`. For each line, in
order, the peer writes one line on stdout, ended by `\n` (a U+2028 inside a string is no line
break):

    {"ok": true, "wire": {...}}             the SDK accepted it; `wire` is what it writes back
    {"ok": true, "wire_text": "{...}"}      the same, as the exact text (escaping compared too)
    {"ok": false, "error": "..."}           the SDK rejected it, and why

An error that starts with `unsupported` says the SDK has no such definition at all (reported as
"has no schema", not as a rejection). Numbers of `wire` are compared as written in the line (so a
peer that writes `1` for `1.0` is seen doing so), members in the order written. Anything else on
stdout, a different number of lines, or a non-zero exit is a failure of the peer, not a finding.

`DEFAULT` are the built-in peers, entries like any given with `--peer NAME=COMMAND`.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WORK = ROOT / ".crosscheck"


class PeerFailure(Exception):
    pass


@dataclass
class Outcome:
    ok: bool
    wire: str | None  # the peer's re-encoding, as text
    error: str | None

    @property
    def unsupported(self) -> bool:
        return not self.ok and (self.error or "").startswith("unsupported")


@dataclass
class Peer:
    name: str
    argv: list[str]
    valid_only: bool = False  # re-serialises valid documents only (its parser is another peer's)
    prepare: Callable[[], None] | None = None
    builtin: bool = False


# ── numbers as written ────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Num:
    """A JSON number that remembers how it was written."""

    text: str

    @property
    def value(self) -> Decimal:
        return Decimal(self.text)


def _no_constants(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def load(text: str) -> Any:
    """JSON with numbers kept as written (`Num`); NaN and Infinity refused, as JSON does."""
    return json.loads(text, parse_int=Num, parse_float=Num, parse_constant=_no_constants)


def render(value: Any, ascii: bool = False) -> str:
    """Compact JSON again, with numbers exactly as they were written (`ascii`: every other
    character escaped, as in a request line)."""
    if isinstance(value, Num):
        return value.text
    if isinstance(value, dict):
        inner = ",".join(
            f"{json.dumps(k, ensure_ascii=ascii)}:{render(v, ascii)}" for k, v in value.items()
        )
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + ",".join(render(v, ascii) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii)


# ── the protocol ──────────────────────────────────────────────────────────────


def request_line(definition: str, text: str) -> str:
    """One input line: the definition, the document as JSON (when it is JSON) and its text."""
    head = f'{{"definition":{json.dumps(definition)},"text":{json.dumps(text)}'
    try:
        text.encode("utf-8")  # invalid UTF-8 (kept as surrogates) is not JSON
        document = render(load(text), ascii=True)
    except (ValueError, UnicodeError, RecursionError):
        return head + "}\n"
    return f'{head},"document":{document}}}\n'


def parse_answer(line: str, number: int) -> Outcome:
    try:
        answer = load(line)
    except ValueError as err:
        raise PeerFailure(
            f"line {number} of its output is not JSON ({err}): {line[:200]!r}"
        ) from err
    if not isinstance(answer, dict) or not isinstance(answer.get("ok"), bool):
        raise PeerFailure(f'line {number} of its output has no boolean "ok": {line[:200]!r}')
    if not answer["ok"]:
        error = answer.get("error")
        return Outcome(False, None, error if isinstance(error, str) else render(error))
    if isinstance(answer.get("wire_text"), str):
        return Outcome(True, answer["wire_text"], None)
    if "wire" not in answer:
        raise PeerFailure(f'line {number} says "ok": true with no "wire": {line[:200]!r}')
    return Outcome(True, render(answer["wire"]), None)


def ask(peer: Peer, items: Sequence[tuple[str, str]]) -> list[Outcome]:
    """The peer's answers to (definition, text) pairs, in order."""
    if not items:
        return []
    payload = "".join(request_line(d, t) for d, t in items)
    try:
        proc = subprocess.run(
            peer.argv,
            input=payload.encode("utf-8", "surrogateescape"),
            capture_output=True,
            check=False,
        )
    except OSError as err:
        raise PeerFailure(f"cannot start {peer.argv[0]}: {err}") from err
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip()[-2000:]
        raise PeerFailure(f"exited with {proc.returncode}: {tail}")
    # lines end at \n only: U+2028 inside a JSON string is no line break
    out = proc.stdout.decode("utf-8", "replace")
    lines = [line for line in out.split("\n") if line.strip()]
    if len(lines) != len(items):
        raise PeerFailure(f"answered {len(lines)} lines for {len(items)} documents")
    return [parse_answer(line, n) for n, line in enumerate(lines, 1)]


def parse_peer(option: str) -> Peer:
    """`NAME=COMMAND` (the command split as a shell would, without one)."""
    name, sep, command = option.partition("=")
    if not sep or not name.strip() or not command.strip():
        raise ValueError(f"--peer {option!r}: give NAME=COMMAND, e.g. go='go run ./cmd/peer'")
    return Peer(name.strip(), shlex.split(command))


# ── the built-in peers ────────────────────────────────────────────────────────


def _prepare_zod() -> None:
    if not (WORK / "node_modules" / "@ag-ui" / "core").is_dir():
        raise PeerFailure(
            "@ag-ui/core is not installed: copy tests/crosscheck/package*.json to .crosscheck/ "
            "and run `npm ci --prefix .crosscheck` (or `nox -s crosscheck`)"
        )
    # Node resolves packages from the script's own folder, so the script runs from there.
    shutil.copy(HERE / "zod_roundtrip.mjs", WORK / "zod_roundtrip.mjs")


def _prepare_pydantic() -> None:
    try:
        import ag_ui  # noqa: F401
    except ImportError as err:
        raise PeerFailure(
            f"ag-ui-protocol is not installed ({err}): `pip install ag-ui-protocol==1.0.0` "
            "(or `nox -s crosscheck`)"
        ) from err


def default_peers() -> list[Peer]:
    """@ag-ui/core 1.0.0 (zod, under node) and ag-ui-protocol 1.0.0 (pydantic), twice: as its
    encoder writes, and with `exclude_none=True` as many integrations call it."""
    pydantic = [sys.executable, str(HERE / "pydantic_roundtrip.py")]
    return [
        Peer("zod", ["node", str(WORK / "zod_roundtrip.mjs")], prepare=_prepare_zod, builtin=True),
        Peer("pydantic", pydantic, prepare=_prepare_pydantic, builtin=True),
        Peer(
            "pydantic[exclude_none]",
            [*pydantic, "--exclude-none"],
            valid_only=True,
            prepare=_prepare_pydantic,
            builtin=True,
        ),
    ]
