"""The only reader of spec/: parse the YAML strictly and validate it against the format's meta-schema.

The spec may also be another file (`python -m codegen --spec PATH`, for a fork of the protocol): its
number ledger is then the proto-ledger.txt beside it. The meta-schema is always this repository's
spec/spec-format.schema.json: it describes the format this generator reads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parent.parent
SPEC_PATH = ROOT / "spec" / "agui.yaml"
FORMAT_PATH = ROOT / "spec" / "spec-format.schema.json"
LEDGER_PATH = ROOT / "spec" / "proto-ledger.txt"
LEDGER_NAME = LEDGER_PATH.name


def ledger_path(spec: Path) -> Path:
    """The protobuf number ledger of a spec: proto-ledger.txt in the spec's folder."""
    return spec.parent / LEDGER_NAME


def display(path: Path) -> str:
    """A path as messages name it: relative to the repository root when inside it (spec/agui.yaml),
    else as it is."""
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


class SpecError(Exception):
    """A problem in the spec, reported with the file and the YAML path of the offending node."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


def yaml_path(parts: list[str | int] | tuple[str | int, ...]) -> str:
    return ".".join(str(p) for p in parts) or "(top level)"


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys and non-string keys (YAML 1.1 reads `on:` as True)."""


class _KeyError(Exception):
    """A key the strict loader refuses; read_spec prefixes the spec's name."""


def _mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node)
        where = f"line {key_node.start_mark.line + 1}"
        if not isinstance(key, str):
            raise _KeyError(f"{where}: key {key!r} is not a string; quote it")
        if key in result:
            raise _KeyError(f"{where}: duplicate key {key!r}")
        result[key] = loader.construct_object(value_node, deep=True)
    return result


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def read_spec(text: str, name: str = "spec/agui.yaml") -> dict[str, Any]:
    """Parse and validate the spec text; raise SpecError naming the YAML path of every problem."""
    try:
        raw = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        raise SpecError([f"{name}: {_yaml_problem(exc, name)}"]) from None
    except _KeyError as exc:
        raise SpecError([f"{name}: {exc}"]) from None
    meta = json.loads(FORMAT_PATH.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(meta)
    problems = []
    for error in sorted(validator.iter_errors(raw), key=lambda e: list(map(str, e.absolute_path))):
        # oneOf failures are noisy; point at the most specific sub-error instead.
        best = jsonschema.exceptions.best_match([error]) if error.context else error
        deepest = best
        while deepest.context:
            deepest = jsonschema.exceptions.best_match(deepest.context)
        problems.append(f"{name}: {_explain(deepest)}")
    if problems:
        raise SpecError(sorted(set(problems)))
    assert isinstance(raw, dict)
    return raw


def _yaml_problem(exc: yaml.YAMLError, name: str) -> str:
    """A YAML syntax error as the spec's author should read it: the line and column first, the
    marks naming the spec's file (PyYAML reads a string, which it calls "<unicode string>")."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return f"not valid YAML: {exc}"
    for mark in (exc.context_mark, exc.problem_mark):
        if mark is not None:
            mark.name = name
    where = exc.problem_mark
    return f"line {where.line + 1}, column {where.column + 1}: not valid YAML: {exc}"


NAMING = {
    "fields": (
        "a wire name is camelCase: a lower-case letter, then letters and digits only (no '_', "
        "'-' or space; each new word starts with a capital, as in toolCallId), and a trailing "
        "'?' if the member is optional"
    ),
    "discriminator": (
        "a discriminator is a wire name, so camelCase: a lower-case letter, then letters and "
        "digits only (no '_', '-' or space), as in type"
    ),
    "definitions": (
        "a definition name is PascalCase: a capital letter, then letters and digits only "
        "(no '_', '-' or space), as in ToolCallStartEvent"
    ),
}
"""What the format's naming patterns say, in words (the meta-schema can only give the regex)."""


def _explain(error: jsonschema.ValidationError) -> str:
    """An error of the meta-schema as the spec's author should read it: the YAML path (a badly
    named key's own), then what is wrong, in words rather than the format's regex."""
    path = list(error.absolute_path)
    named = error.validator == "pattern" and "propertyNames" in error.absolute_schema_path
    if named or (error.validator == "pattern" and path[-1:] == ["discriminator"]):
        kind = "definitions" if path == ["definitions"] else "fields" if named else "discriminator"
        key = str(error.instance)
        where = yaml_path([*path, key] if named else path)
        suggestion = _renamed(key, kind)
        hint = f"; write it {suggestion!r}" if suggestion and suggestion != key else ""
        return f"{where}: {key!r} is not a valid name: {NAMING[kind]}{hint}"
    if error.validator == "pattern" and error.validator_value == TYPE_PATTERN:
        return f"{yaml_path(path)}: {error.instance!r} is not a type: {_type_hint(str(error.instance))}"
    if path[-2:-1] == ["values"] and error.validator == "type" and error.instance is None:
        return (
            f'{yaml_path(path)}: the value has no documentation: write it `{path[-1]}: "what '
            'it means"`'
        )
    return f"{yaml_path(path)}: {error.message}"


TYPE_PATTERN = "^[A-Za-z][A-Za-z0-9\\[\\] |]*$"
"""The meta-schema's pattern of a type expression (spec-format.schema.json, typeExpr)."""


def _type_hint(text: str) -> str:
    """What a type expression the format's pattern refuses should be, in words."""
    if text.rstrip().endswith("?"):
        return "an optional member is marked on its wire name (`name?:`), not on its type"
    if "<" in text:
        return "a list is written list[T]"
    if "," in text:
        return (
            "list[T] takes one item type, and there are no maps: an object of any keys is "
            "`object`, one of known keys an object definition"
        )
    return "a type is a name, list[T] or A | B (letters, digits, brackets, spaces and '|')"


def _renamed(key: str, kind: str) -> str:
    """The name in the right case, when the words of `key` can be told apart (message_id ->
    messageId, tool-call -> toolCall, text_Message_start -> TextMessageStart)."""
    optional = "?" if key.endswith("?") and kind == "fields" else ""
    words = [w for w in re.split(r"[^A-Za-z0-9]+", key.rstrip("?")) if w]
    if not words or not words[0][:1].isalpha():
        return ""
    first = words[0][:1]
    head = (first.upper() if kind == "definitions" else first.lower()) + words[0][1:]
    return head + "".join(w[:1].upper() + w[1:] for w in words[1:]) + optional


def load_spec(path: Path = SPEC_PATH) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError([f"{display(path)}: no such spec"]) from None
    return read_spec(text, display(path))


def load_ledger(path: Path = LEDGER_PATH) -> str:
    """The protobuf number ledger's text. It must exist: numbering from scratch would renumber
    every field the binary transport has shipped."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError([f"{display(path)} is missing; restore it from version control"]) from None
